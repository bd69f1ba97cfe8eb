package webhooksrc

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/schemas"
)

// FuzzVerify: whatever the headers and body, Verify never panics; a body signed with the
// source's secret always verifies; any other signature is refused.
func FuzzVerify(f *testing.F) {
	f.Add("sha256=00", "id", "push", []byte(`{}`), false)
	f.Add("", "", "", []byte(nil), true)
	f.Add("sha256="+strings.Repeat("a", 64), strings.Repeat("i", 200), "e\x00", []byte("\xff"), false)
	f.Fuzz(func(t *testing.T, sig, id, event string, body []byte, sign bool) {
		src := &Source{Scheme: SchemeGitHub, Secret: []byte("fuzz-secret-0123456789")}
		h := http.Header{}
		h["X-Github-Delivery"] = []string{id}
		h["X-Github-Event"] = []string{event}
		if sign {
			sig = ghSign("fuzz-secret-0123456789", string(body))
		}
		h["X-Hub-Signature-256"] = []string{sig}
		d, err := src.Verify(h, body, time.Now())
		if sign && (err == ErrForged || err == ErrUnsigned) {
			t.Fatalf("a signed body is refused: %v", err)
		}
		if !sign && err == nil && sig != ghSign("fuzz-secret-0123456789", string(body)) {
			t.Fatalf("a wrong signature %q verifies", sig)
		}
		if err == nil && (d.ID == "" || len(d.ID) > MaxDeliveryIDBytes) {
			t.Fatalf("a delivery id out of bounds: %q", d.ID)
		}
	})
}

// FuzzEvent: a verified delivery's body, whatever it is, becomes a valid JSON event or a
// BadDelivery, never a panic or broken JSON.
func FuzzEvent(f *testing.F) {
	f.Add("application/json", []byte(`{"a":1}`), "d1", "push", "q=1")
	f.Add("application/x-www-form-urlencoded", []byte(`payload=%7B%7D`), "d2", "", "")
	f.Add("text/plain", []byte("\xff\xfe"), "d3", "x", "a=b&a=c")
	f.Add("application/json; charset=utf-8", []byte(`[`), "d4", "", "%zz")
	f.Fuzz(func(t *testing.T, ct string, body []byte, id, event, query string) {
		src := &Source{EndpointKey: "gh"}
		q, _ := url.ParseQuery(query)
		h := http.Header{}
		h.Set("Content-Type", ct)
		ev, err := src.Event(&Received{Delivery: Delivery{ID: id, EventType: event}, Body: body, Header: h, Query: q,
			ReceivedAt: time.Unix(0, 0)})
		if err != nil {
			if _, ok := err.(*BadDelivery); !ok {
				t.Fatalf("not a BadDelivery: %v", err)
			}
			return
		}
		if !json.Valid(ev) {
			t.Fatalf("invalid event JSON: %s", ev)
		}
	})
}

// FuzzBuckets: any buckets definition is accepted or refused with details; an accepted
// bucket renders only paths of valid segments, which its template matches.
func FuzzBuckets(f *testing.F) {
	f.Add(`[{"key":"repo","pathTemplate":"repos/:owner/:repo","paramsSchema":{"type":"object"}}]`, `{"owner":"o","repo":"r"}`)
	f.Add(`[{"key":"b","pathTemplate":"../x"}]`, `{}`)
	f.Add(`[{"key":"b","pathTemplate":":a","paramsSchema":{"$ref":"#"}}]`, `{"a":1.5e300}`)
	f.Add(`null`, `[]`)
	cache := schemas.NewCache()
	f.Fuzz(func(t *testing.T, buckets, params string) {
		bs, d := ParseBuckets(json.RawMessage(buckets))
		if len(d) > 0 {
			return
		}
		for i := range bs {
			p, err := bs[i].Render(cache, json.RawMessage(params))
			if err != nil {
				continue
			}
			if !bs[i].Matches(p) {
				t.Fatalf("bucket %q renders %q, which its template does not match", bs[i].PathTemplate, p)
			}
		}
	})
}
