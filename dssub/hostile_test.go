package dssub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// hostileCase is one request a hostile or careless client might send to the
// subscription APIs. status is the exact answer; code, when set, the error code.
type hostileCase struct {
	name         string
	method, path string
	body         string
	headers      []string
	status       int
	code         string
}

func pullWake(extra string) string {
	return `{"type":"pull-wake","wake_stream":"hostile-wake"` + extra + `}`
}

func hostileCases() []hostileCase {
	put := func(name, body string, status int, code string) hostileCase {
		return hostileCase{name: name, method: "PUT", path: subPath("new"), body: body, status: status, code: code}
	}
	const bad = http.StatusBadRequest
	const inv = codeInvalidRequest
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf(`"s%d"`, i)
	}
	cases := []hostileCase{
		put("truncated JSON", `{"type":"pull-wake"`, bad, inv),
		put("not JSON", `{type: pull-wake}`, bad, inv),
		put("array body", `[]`, bad, inv),
		put("string body", `"pull-wake"`, bad, inv),
		put("null body", `null`, bad, inv),
		put("trailing garbage", pullWake(`,"streams":["s1"]`)+`}`, bad, inv),
		put("type a number", `{"type":5,"streams":["s1"]}`, bad, inv),
		put("type unknown", `{"type":"poll","streams":["s1"]}`, bad, inv),
		put("type with NUL", `{"type":"pull-wake\u0000","streams":["s1"],"wake_stream":"w"}`, bad, inv),
		put("no pattern and no streams", pullWake(``), bad, inv),
		put("streams a string", pullWake(`,"streams":"s1"`), bad, inv),
		put("streams with a number", pullWake(`,"streams":[1]`), bad, inv),
		put("streams with null", pullWake(`,"streams":[null]`), bad, inv),
		put("stream path with ..", pullWake(`,"streams":["a/../b"]`), bad, inv),
		put("stream path with .", pullWake(`,"streams":["./a"]`), bad, inv),
		put("stream path with //", pullWake(`,"streams":["a//b"]`), bad, inv),
		put("stream path with NUL", pullWake(`,"streams":["a\u0000b"]`), bad, inv),
		put("stream path with a control", pullWake(`,"streams":["a\u0007b"]`), bad, inv),
		put("stream path with a lone surrogate", pullWake(`,"streams":["a\ud800"]`), bad, inv),
		put("stream path reserved", pullWake(`,"streams":["__ds/x"]`), bad, inv),
		put("stream path too long", pullWake(`,"streams":["`+strings.Repeat("p", 1100)+`"]`), bad, inv),
		put("1001 streams", pullWake(`,"streams":[`+strings.Join(many, ",")+`]`), bad, inv),
		put("pattern a number", pullWake(`,"pattern":7`), bad, inv),
		put("pattern with ..", pullWake(`,"pattern":"a/../*"`), bad, inv),
		put("pattern with NUL", pullWake(`,"pattern":"a\u0000/*"`), bad, inv),
		put("pattern with a lone surrogate", pullWake(`,"pattern":"\udfff/**"`), bad, inv),
		put("pattern too long", pullWake(`,"pattern":"`+strings.Repeat("q", 1100)+`"`), bad, inv),
		put("pattern with 65 segments", pullWake(`,"pattern":"`+strings.Repeat("x/", 64)+`x"`), bad, inv),
		put("pattern reserved", pullWake(`,"pattern":"__ds/**"`), bad, inv),
		put("description with NUL", pullWake(`,"streams":["s1"],"description":"a\u0000"`), bad, inv),
		put("description with a lone surrogate", pullWake(`,"streams":["s1"],"description":"\ud800"`), bad, inv),
		put("description with an escape", pullWake(`,"streams":["s1"],"description":"\u001b[31m"`), bad, inv),
		put("description too long", pullWake(`,"streams":["s1"],"description":"`+strings.Repeat("d", 5000)+`"`), bad, inv),
		put("description a number", pullWake(`,"streams":["s1"],"description":5`), bad, inv),
		put("lease negative", pullWake(`,"streams":["s1"],"lease_ttl_ms":-5`), bad, inv),
		put("lease a string", pullWake(`,"streams":["s1"],"lease_ttl_ms":"1000"`), bad, inv),
		put("lease a float", pullWake(`,"streams":["s1"],"lease_ttl_ms":1500.5`), bad, inv),
		put("lease too big", pullWake(`,"streams":["s1"],"lease_ttl_ms":1e12`), bad, inv),
		put("wake_stream with ..", `{"type":"pull-wake","streams":["s1"],"wake_stream":"../w"}`, bad, inv),
		put("wake_stream with NUL", `{"type":"pull-wake","streams":["s1"],"wake_stream":"w\u0000"}`, bad, inv),
		put("wake_stream is followed", `{"type":"pull-wake","streams":["s1","w"],"wake_stream":"w"}`, bad, inv),
		put("webhook without url", `{"type":"webhook","streams":["s1"]}`, bad, inv),
		put("webhook url with NUL", `{"type":"webhook","streams":["s1"],"webhook":{"url":"https://example.com/\u0000"}}`, bad, ""),
		put("webhook url too long", `{"type":"webhook","streams":["s1"],"webhook":{"url":"https://example.com/`+strings.Repeat("u", 3000)+`"}}`, bad, inv),
		put("webhook url ftp", `{"type":"webhook","streams":["s1"],"webhook":{"url":"ftp://example.com/"}}`, bad, codeURLRejected),
		put("webhook url private", `{"type":"webhook","streams":["s1"],"webhook":{"url":"https://10.0.0.1/"}}`, bad, codeURLRejected),
		put("webhook url with credentials", `{"type":"webhook","streams":["s1"],"webhook":{"url":"https://u:p@example.com/"}}`, bad, codeURLRejected),
		put("invalid UTF-8 in a string", pullWake(`,"streams":["s1"],"description":"\xff\xfe"`), bad, inv),
		put("invalid UTF-8 outside strings", "\xef\xbb\xbf"+pullWake(`,"streams":["s1"]`), bad, inv),
		put("member name with a lone surrogate", pullWake(`,"streams":["s1"],"\ud800":1`), bad, inv),
		put("deep nesting", pullWake(`,"streams":["s1"],"x":`+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)), bad, inv),
		put("body over 1 MiB", pullWake(`,"streams":["s1"],"x":"`+strings.Repeat("x", 1<<20)+`"`), http.StatusRequestEntityTooLarge, inv),

		{name: "id empty", method: "PUT", path: subPath(""), body: pullWake(`,"streams":["s1"]`), status: http.StatusNotFound},
		{name: "id too long", method: "PUT", path: subPath(strings.Repeat("i", 300)), body: pullWake(`,"streams":["s1"]`), status: http.StatusNotFound},
		{name: "id with NUL", method: "PUT", path: subPath("a%00b"), body: pullWake(`,"streams":["s1"]`), status: http.StatusBadRequest},
		{name: "id with invalid UTF-8", method: "PUT", path: subPath("a%FFb"), body: pullWake(`,"streams":["s1"]`), status: http.StatusBadRequest},
		{name: "id with an encoded slash", method: "PUT", path: subPath("a%2Fb"), body: pullWake(`,"streams":["s1"]`), status: http.StatusNotFound},
		{name: "unknown action", method: "POST", path: subPath("existing") + "/explode", body: `{}`, status: http.StatusNotFound},
		{name: "wrong method", method: "PATCH", path: subPath("existing"), body: `{}`, status: http.StatusMethodNotAllowed},

		{name: "add streams empty", method: "POST", path: subPath("existing") + "/streams", body: `{"streams":[]}`, status: bad, code: inv},
		{name: "add streams a string", method: "POST", path: subPath("existing") + "/streams", body: `{"streams":"s2"}`, status: bad, code: inv},
		{name: "add streams with ..", method: "POST", path: subPath("existing") + "/streams", body: `{"streams":["a/./b"]}`, status: bad, code: inv},
		{name: "add own wake stream", method: "POST", path: subPath("existing") + "/streams", body: `{"streams":["hostile-wake"]}`, status: bad, code: inv},
		{name: "add streams with NUL", method: "POST", path: subPath("existing") + "/streams", body: `{"streams":["s\u0000"]}`, status: bad, code: inv},
		{name: "add streams to nobody", method: "POST", path: subPath("nobody") + "/streams", body: `{"streams":["s2"]}`, status: http.StatusNotFound, code: codeNotFound},
		{name: "remove stream with NUL", method: "DELETE", path: subPath("existing") + "/streams/s%00", status: bad},

		{name: "claim without worker", method: "POST", path: subPath("existing") + "/claim", body: `{}`, status: bad, code: inv},
		{name: "claim worker a number", method: "POST", path: subPath("existing") + "/claim", body: `{"worker":5}`, status: bad, code: inv},
		{name: "claim worker with NUL", method: "POST", path: subPath("existing") + "/claim", body: `{"worker":"w\u0000"}`, status: bad, code: inv},
		{name: "claim worker with a newline", method: "POST", path: subPath("existing") + "/claim", body: `{"worker":"w\n1"}`, status: bad, code: inv},
		{name: "claim worker too long", method: "POST", path: subPath("existing") + "/claim", body: `{"worker":"` + strings.Repeat("w", 300) + `"}`, status: bad, code: inv},
		{name: "claim truncated", method: "POST", path: subPath("existing") + "/claim", body: `{"worker":`, status: bad, code: inv},

		{name: "ack without token", method: "POST", path: subPath("existing") + "/ack", body: `{"wake_id":"w","generation":1,"acks":[]}`, status: http.StatusUnauthorized, code: codeTokenInvalid},
		{name: "ack with a bad token", method: "POST", path: subPath("existing") + "/ack", body: `{"wake_id":"w","generation":1}`, headers: []string{"Authorization", "Bearer x.y.z"}, status: http.StatusUnauthorized, code: codeTokenInvalid},
		{name: "ack with a lone surrogate", method: "POST", path: subPath("existing") + "/ack", body: `{"acks":[{"stream":"\ud800","offset":"-1"}]}`, status: bad, code: inv},
		{name: "ack acks a string", method: "POST", path: subPath("existing") + "/ack", body: `{"acks":"all"}`, status: bad, code: inv},
		{name: "release truncated", method: "POST", path: subPath("existing") + "/release", body: `{"wake_id":`, status: bad, code: inv},
		{name: "callback not JSON", method: "POST", path: subPath("existing") + "/callback", body: `done`, status: bad, code: inv},
		{name: "callback with invalid UTF-8", method: "POST", path: subPath("existing") + "/callback", body: "{\"wake_id\":\"\xc3\x28\"}", status: bad, code: inv},
	}
	return cases
}

// TestHostileInput sends every hostile case and checks, for each, the exact status and
// error code, that no subscription table changed, and that the service still works.
func TestHostileInput(t *testing.T) {
	h := startHarness(t, "", testOptions())
	h.createStream("s1", `[{"n":1}]`)
	h.createSub("existing", map[string]any{"type": "pull-wake", "streams": []string{"s1"}, "wake_stream": "hostile-wake"})
	fingerprint := func() string {
		var fp string
		err := h.Pool.QueryRow(context.Background(), `SELECT
			(SELECT count(*) || ':' || coalesce(string_agg(md5(s::text), ',' ORDER BY id), '') FROM ds_subscriptions s) || '|' ||
			(SELECT count(*) || ':' || coalesce(string_agg(md5(l::text), ',' ORDER BY subscription_id, path), '') FROM ds_subscription_streams l)`).Scan(&fp)
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	cases := hostileCases()
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := fingerprint()
			r := h.do(c.method, c.path, c.body, c.headers...)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %.300s", r.Status, c.status, r.Body)
			}
			if c.code != "" {
				if got := r.errorCode(t); got != c.code {
					t.Fatalf("code %q, want %q: %.300s", got, c.code, r.Body)
				}
			}
			if after := fingerprint(); after != before {
				t.Fatal("a refused request changed the subscription tables")
			}
		})
	}
	// the service is unharmed: a good subscription is created and read back
	h.createSub("after", map[string]any{"type": "pull-wake", "streams": []string{"s1"}, "wake_stream": "after-wake",
		"description": "multi\nline"})
	if got := h.getSub("after")["description"]; got != "multi\nline" {
		t.Fatalf("description %q", got)
	}
}

// TestDatabaseUnavailableIs503: with the database gone, the subscription APIs answer 503
// SERVICE_UNAVAILABLE with Retry-After (the request may be retried as is), not 500.
func TestDatabaseUnavailableIs503(t *testing.T) {
	h := startHarness(t, "", testOptions())
	h.createStream("s1", `[{"n":1}]`)
	h.createSub("existing", map[string]any{"type": "pull-wake", "streams": []string{"s1"}, "wake_stream": "w"})
	// The database goes away: it stops accepting connections and every connection of
	// the harness's pool is cut (one connection of our own stays, to undo it).
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(h.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	db := cfg.Database
	cfg.Database = "postgres" // a database may not be closed from inside itself
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS true`) //nolint:errcheck
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = $1`, db); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", subPath("existing"), ""},
		{"PUT", subPath("new"), `{"type":"pull-wake","streams":["s1"],"wake_stream":"w2"}`},
		{"POST", subPath("existing") + "/claim", `{"worker":"w1"}`},
		{"DELETE", subPath("existing"), ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := h.do(c.method, c.path, body)
		if r.Status != http.StatusServiceUnavailable || r.errorCode(t) != codeUnavailable || r.Header.Get("Retry-After") != "1" {
			t.Fatalf("%s %s: %d %s (Retry-After %q), want 503 %s", c.method, c.path, r.Status, r.Body,
				r.Header.Get("Retry-After"), codeUnavailable)
		}
	}
}
