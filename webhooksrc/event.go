package webhooksrc

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/wire"
)

// EventType is the State Protocol type of a delivery's event: the collection Electric's
// runtime reads (webhookObservationCollections.events) and its wakes name.
const EventType = "webhook_event"

// recordedHeaders are the request headers kept in an event: what says what happened,
// never a signature or a credential.
var recordedHeaders = []string{"Content-Type", "User-Agent", "X-GitHub-Event", "X-GitHub-Delivery", "X-GitHub-Hook-ID",
	"X-GitHub-Hook-Installation-Target-ID", "X-GitHub-Hook-Installation-Target-Type", "Webhook-Id", "Webhook-Timestamp"}

// MaxQueryBytes bounds a delivery URL's query, which the event records.
const MaxQueryBytes = 2048

// Received is a verified delivery, as it is recorded.
type Received struct {
	Delivery
	Bucket     string // "" for the root stream
	Body       []byte
	Header     http.Header
	Query      url.Values
	ReceivedAt time.Time
}

// Event renders a delivery as the event appended to the source's stream: {"type":
// "webhook_event","key":<delivery id>,"value":<Electric's WebhookEventRow>,"headers":
// {"operation":"insert"}}. A JSON body is kept byte for byte; GitHub's form encoding
// (payload=<json>) is unwrapped; any other UTF-8 body is kept as a string.
func (s *Source) Event(d *Received) ([]byte, error) {
	body, err := eventBody(d.Header.Get("Content-Type"), d.Body)
	if err != nil {
		return nil, err
	}
	var v rawjson.Object
	v.String("key", d.ID).Raw("body", body)
	if d.EventType != "" {
		v.String("event_type", d.EventType)
	} else {
		v.Null("event_type")
	}
	v.String("endpoint_key", s.EndpointKey)
	if d.Bucket != "" {
		v.String("bucket", d.Bucket)
	} else {
		v.Null("bucket")
	}
	v.String("stream_path", s.BucketStreamPath(d.Bucket))
	var hs rawjson.Object
	for _, name := range recordedHeaders {
		if x := d.Header.Get(name); x != "" && utf8.ValidString(x) {
			hs.String(strings.ToLower(name), x)
		}
	}
	v.Raw("headers", hs.Bytes())
	v.String("received_at", d.ReceivedAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	q := map[string]any{}
	for k, vals := range d.Query {
		if len(vals) == 1 {
			q[k] = vals[0]
		} else {
			q[k] = vals
		}
	}
	qb, _ := json.Marshal(q)
	var req rawjson.Object
	req.String("method", http.MethodPost).String("content_type", d.Header.Get("Content-Type")).
		Int("size_bytes", int64(len(d.Body))).Raw("query", qb).Null("ip")
	v.Raw("request", req.Bytes())
	return wire.Event{Type: EventType, Key: d.ID, Value: v.Bytes(), Operation: wire.OpInsert}.Marshal(), nil
}

func eventBody(contentType string, body []byte) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		if !json.Valid(body) || !utf8.Valid(body) {
			return nil, &BadDelivery{"The body is not valid JSON (UTF-8)"}
		}
		return bytes.TrimSpace(body), nil
	case mt == "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if p := form.Get("payload"); err == nil && p != "" {
			if !json.Valid([]byte(p)) {
				return nil, &BadDelivery{"The form's payload is not valid JSON"}
			}
			return []byte(p), nil
		}
	}
	if !utf8.Valid(body) {
		return nil, &BadDelivery{"A body that is not JSON must be UTF-8 text"}
	}
	b, _ := json.Marshal(string(body))
	return b, nil
}
