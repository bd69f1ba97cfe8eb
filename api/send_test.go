package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire/composer"
)

// lastInbox returns the last inbox event of an entity's stream.
func (h *harness) lastInbox(url string) event {
	h.t.Helper()
	msgs := ofType(h.events(url), "inbox")
	require.NotEmpty(h.t, msgs)
	return msgs[len(msgs)-1]
}

func TestSendComposerInputStoresThePayloadAsSent(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)

	// Unusual whitespace, nodes before source, an unknown node kind with extra fields,
	// non-ASCII text (an emoji is two UTF-16 units), escapes that must not be decoded.
	const payload = "{ \"nodes\" :[\n\t{\"kind\":\"issue\", \"start\":0,\"end\":6, \"raw\":\"h\u00e9llo \", \"number\": 1e2, \"extra\":{\"deep\":[true, null]}},\n" +
		"\t{\"kind\":\"slash_command\",\"start\":8,\"end\":19,\"raw\":\"/quickstart\",\"name\":\"quickstart\",\"unknown\":true}],\n" +
		"  \"source\":  \"h\u00e9llo \U0001F600/quickstart \\u00e9\\n<&>\" }"
	before := time.Now()
	txid := h.mustSend("/chat/one", `{"type":"composer_input","payload":`+payload+`}`)

	events := h.events("/chat/one")
	require.Equal(t, []string{"entity_created", "inbox"}, types(events))
	ev := events[1]
	require.Equal(t, "inbox", ev.Type)
	require.Regexp(t, `^msg-in-\d+-[0-9a-z]{6}$`, ev.Key)
	require.Equal(t, "insert", ev.Headers["operation"])
	require.Equal(t, txid, ev.Headers["txid"])
	requireISOTime(t, json.RawMessage(strconv.Quote(ev.Headers["timestamp"])))

	require.Equal(t, payload, string(ev.Value["payload"]), "payload byte for byte")
	require.Contains(t, string(ev.Raw), `"payload":`+payload, "payload byte for byte inside the stored event")
	require.ElementsMatch(t, []string{"from", "payload", "timestamp", "mode", "status", "processed_at", "message_type"},
		keys(ev.Value))
	require.Equal(t, devPrincipal, str(t, ev.Value["from"]))
	require.Equal(t, "immediate", str(t, ev.Value["mode"]))
	require.Equal(t, "processed", str(t, ev.Value["status"]))
	require.Equal(t, "composer_input", str(t, ev.Value["message_type"]))
	ts := requireISOTime(t, ev.Value["timestamp"])
	require.False(t, ts.Before(before.Truncate(time.Millisecond)))
	requireISOTime(t, ev.Value["processed_at"])
}

func TestSendComposerInputInvalid(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)

	cases := []struct {
		name    string
		payload string
		want    []detail
	}{
		{"raw differs from the source slice",
			`{"source":"/quickstart","nodes":[{"kind":"slash_command","start":0,"end":11,"raw":"/quick","name":"quickstart"}]}`,
			[]detail{{"/nodes/0/raw", "must equal source.slice(start, end)"}}},
		{"bad name and overlap together",
			`{"source":"/Abc /def","nodes":[{"kind":"slash_command","start":0,"end":4,"raw":"/Abc","name":"Abc"},
				{"kind":"slash_command","start":2,"end":9,"raw":"bc /def","name":"def"}]}`,
			[]detail{{"/nodes/0/name", "must be a lowercase kebab-case command name"},
				{"/nodes/1/start", "must not overlap the previous node"}}},
		{"not an object", `"hello"`, []detail{{"/", "must be an object"}}},
		{"null", `null`, []detail{{"/", "must be an object"}}},
		{"source and nodes of the wrong type", `{"source":5,"nodes":{}}`,
			[]detail{{"/source", "must be a string"}, {"/nodes", "must be an array"}}},
		{"UTF-16 offsets: an emoji is two units", `{"source":"😀x","nodes":[{"kind":"text","start":1,"end":2,"raw":"x"}]}`,
			[]detail{{"/nodes/0/raw", "must equal source.slice(start, end)"}}},
		{"negative start on the first node", `{"source":"ab","nodes":[{"kind":"text","start":-1,"end":1,"raw":"a"}]}`,
			[]detail{{"/nodes/0/start", "must be >= 0"}, {"/nodes/0/start", "must not overlap the previous node"},
				{"/nodes/0/raw", "must equal source.slice(start, end)"}}},
		{"kind-specific fields", `{"source":"abc","nodes":[{"kind":"file","start":0,"end":1,"raw":"a","path":""},
			{"kind":"branch","start":1,"end":2,"raw":"b"},{"kind":"","start":2,"end":3,"raw":"c"}]}`,
			[]detail{{"/nodes/0/path", "must be a string"}, {"/nodes/1/name", "must be a non-empty string"},
				{"/nodes/2/kind", "must be a non-empty string"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.send("/chat/one", `{"type":"composer_input","payload":`+c.payload+`}`)
			requireValidationFailed(t, r, c.want...)
		})
	}
	// A payload absent altogether is "not an object" for composer_input (422, not 400).
	requireValidationFailed(t, h.send("/chat/one", `{"type":"composer_input"}`), detail{"/", "must be an object"})

	require.Empty(t, ofType(h.events("/chat/one"), "inbox"), "refused sends append nothing")
}

func TestSendMessageTypes(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"typed","description":"d","inbox_schemas":{"task":{"type":"object",
		"properties":{"n":{"type":"integer","minimum":1},"title":{"type":"string"}},"required":["n","title"]}}}`)
	h.registerType(`{"name":"closed","description":"d","inbox_schemas":{}}`)
	h.registerType(`{"name":"open","description":"d"}`)
	h.mustSpawn("typed", "t", nil)
	h.mustSpawn("closed", "c", nil)
	h.mustSpawn("open", "o", nil)
	composer := `{"source":"hi"}`

	t.Run("declared type, valid payload", func(t *testing.T) {
		h.mustSend("/typed/t", `{"type":"task","payload":{"n":1,"title":"x"}}`)
		require.Equal(t, "task", str(t, h.lastInbox("/typed/t").Value["message_type"]))
	})
	t.Run("declared type, payload failing the schema", func(t *testing.T) {
		r := h.send("/typed/t", `{"type":"task","payload":{"n":0}}`)
		requireValidationFailed(t, r, detail{"/", "must have required property 'title'"}, detail{"/n", "must be >= 1"})
	})
	t.Run("undeclared type", func(t *testing.T) {
		requireError(t, h.send("/typed/t", `{"type":"nope","payload":{}}`), http.StatusUnprocessableEntity,
			"UNKNOWN_MESSAGE_TYPE", "Unknown message type: nope")
	})
	t.Run("composer_input needs no declaration", func(t *testing.T) {
		h.mustSend("/typed/t", `{"type":"composer_input","payload":`+composer+`}`)
	})
	t.Run("untyped sends are never validated", func(t *testing.T) {
		h.mustSend("/typed/t", `{"payload":[1,2,3]}`)
		require.NotContains(t, keys(h.lastInbox("/typed/t").Value), "message_type")
	})
	t.Run("empty inbox_schemas refuses every typed send", func(t *testing.T) {
		requireError(t, h.send("/closed/c", `{"type":"task","payload":{}}`), http.StatusUnprocessableEntity,
			"UNKNOWN_MESSAGE_TYPE", "Unknown message type: task")
		h.mustSend("/closed/c", `{"type":"composer_input","payload":`+composer+`}`)
		h.mustSend("/closed/c", `{"payload":"untyped"}`)
	})
	t.Run("no inbox schemas accepts anything", func(t *testing.T) {
		h.mustSend("/open/o", `{"type":"whatever","payload":5}`)
		h.mustSend("/open/o", `{"type":"other","payload":null}`)
		require.Equal(t, "null", string(h.lastInbox("/open/o").Value["payload"]))
	})
	require.Len(t, ofType(h.events("/typed/t"), "inbox"), 3)
}

func TestSendRejectsMalformedRequests(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)
	const url = "/chat/one"

	requireDetails(t, h.send(url, `{"type":"x"}`), http.StatusBadRequest, "INVALID_REQUEST", "Missing required field: payload")
	requireDetails(t, h.send(url, ``), http.StatusBadRequest, "INVALID_REQUEST", "Missing required field: payload")
	requireDetails(t, h.send(url, `{"payload":`), http.StatusBadRequest, "INVALID_REQUEST", "Invalid JSON body")
	requireDetails(t, h.send(url, `{"payload":1}{}`), http.StatusBadRequest, "INVALID_REQUEST", "Invalid JSON body")
	requireSchemaMismatch(t, h.send(url, `[{"payload":1}]`), detail{"/", "must be object"})
	requireSchemaMismatch(t, h.send(url, `{"payload":1,"type":5,"key":false,"mode":"sometimes","afterMs":"soon","from":{}}`),
		detail{"/type", "must be string"},
		detail{"/key", "must be string"},
		detail{"/mode", "must be equal to one of the allowed values"},
		detail{"/afterMs", "must be number"},
		detail{"/from", "must be string"})
	requireError(t, h.send(url, `{"payload":1,"from":"/principal/user%3Amallory"}`), http.StatusBadRequest,
		"INVALID_REQUEST", "Request from must match Electric-Principal")
	requireError(t, h.send(url, `{"payload":1,"from_principal":"/principal/user%3Amallory"}`), http.StatusBadRequest,
		"INVALID_REQUEST", "Request from_principal must match Electric-Principal")

	// Extra keys are allowed (the route schema is open).
	h.mustSend(url, `{"payload":1,"extra":"ignored"}`)
	require.Len(t, ofType(h.events(url), "inbox"), 1)
}

func TestSendModesAndPrincipals(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)
	const url = "/chat/one"

	t.Run("queued", func(t *testing.T) {
		h.mustSend(url, `{"payload":"q","mode":"queued"}`)
		v := h.lastInbox(url).Value
		require.Equal(t, "queued", str(t, v["mode"]))
		require.Equal(t, "pending", str(t, v["status"]))
		require.Regexp(t, `^\d{16}:a0$`, str(t, v["position"]))
		ms, err := strconv.ParseInt(strings.TrimSuffix(str(t, v["position"]), ":a0"), 10, 64)
		require.NoError(t, err)
		require.WithinDuration(t, time.Now(), time.UnixMilli(ms), time.Minute)
		require.NotContains(t, keys(v), "processed_at")
	})
	t.Run("queued with a position", func(t *testing.T) {
		h.mustSend(url, `{"payload":"q","mode":"queued","position":"a5"}`)
		require.Equal(t, "a5", str(t, h.lastInbox(url).Value["position"]))
	})
	t.Run("key", func(t *testing.T) {
		h.mustSend(url, `{"payload":"k","key":"my-key"}`)
		require.Equal(t, "my-key", h.lastInbox(url).Key)
	})
	t.Run("from matching the principal", func(t *testing.T) {
		h.mustSend(url, `{"payload":"f","from":"`+devPrincipal+`"}`)
		require.Equal(t, devPrincipal, str(t, h.lastInbox(url).Value["from"]))
	})
	t.Run("Electric-Principal header", func(t *testing.T) {
		// alice may send once the creator (the dev principal) grants her write
		requireError(t, h.send(url, `{"payload":"a"}`, "Electric-Principal", "user:alice"),
			http.StatusUnauthorized, "UNAUTHORIZED", "Principal is not allowed to write "+url)
		requireStatus(t, h.do(http.MethodPost, entitiesPath+url+"/grants",
			`{"subject_kind":"principal","subject_value":"user:alice","permission":"write"}`), http.StatusCreated)
		for _, header := range []string{"user:alice", "/principal/user%3Aalice"} {
			h.mustSend(url, `{"payload":"a"}`, "Electric-Principal", header)
			require.Equal(t, "/principal/user%3Aalice", str(t, h.lastInbox(url).Value["from"]))
			h.mustSend(url, `{"payload":"a","from":"/principal/user%3Aalice"}`, "Electric-Principal", header)
			requireError(t, h.send(url, `{"payload":"a","from":"`+devPrincipal+`"}`, "Electric-Principal", header),
				http.StatusBadRequest, "INVALID_REQUEST", "Request from must match Electric-Principal")
		}
	})
	t.Run("unparseable principal falls back to the dev principal", func(t *testing.T) {
		h.mustSend(url, `{"payload":"a"}`, "Electric-Principal", "robot:x")
		require.Equal(t, devPrincipal, str(t, h.lastInbox(url).Value["from"]))
	})
}

func TestSendToMissingOrStoppedEntities(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d","inbox_schemas":{"task":{"type":"object","required":["n"]}}}`)
	h.mustSpawn("chat", "killed", nil)
	h.mustSpawn("chat", "stopped", nil)
	requireStatus(t, h.do(http.MethodDelete, entitiesPath+"/chat/killed", nil), http.StatusOK)
	h.mustSignal("/chat/stopped", `{"signal":"SIGTERM"}`)

	requireError(t, h.send("/chat/ghost", `{"payload":1}`), http.StatusNotFound, "NOT_FOUND", "Entity not found at /chat/ghost")
	requireError(t, h.send("/nope/one", `{"payload":1}`), http.StatusNotFound, "UNKNOWN_ENTITY_TYPE", "Entity type not found: nope")

	for _, url := range []string{"/chat/killed", "/chat/stopped"} {
		before := h.events(url)
		// NOT_RUNNING wins over every content error.
		for _, body := range []string{
			`{"payload":"fine"}`,
			`{"type":"task","payload":{"n":1}}`,
			`{"type":"task","payload":{}}`,
			`{"type":"nope","payload":{}}`,
			`{"type":"composer_input","payload":{"source":"/x","nodes":[{"kind":"text","start":0,"end":2,"raw":"no"}]}}`,
			`{"type":"composer_input"}`,
			`{}`,
		} {
			requireError(t, h.send(url, body), http.StatusConflict, "NOT_RUNNING", "Entity is not accepting writes")
		}
		require.Equal(t, before, h.events(url), "nothing appended to %s", url)
	}
}

func TestSendBodyLimit(t *testing.T) {
	h := setup(t, testserver.Options{API: api.Config{MaxBodyBytes: 1024}})
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)

	h.mustSend("/chat/one", `{"payload":"`+strings.Repeat("a", 900)+`"}`)
	r := h.send("/chat/one", `{"payload":"`+strings.Repeat("a", 1100)+`"}`)
	requireError(t, r, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", "Request body exceeds the limit of 1024 bytes")
	require.Len(t, ofType(h.events("/chat/one"), "inbox"), 1)

	// The limit holds for the other JSON routes too.
	requireStatus(t, h.do(http.MethodPost, typesPath,
		`{"name":"big","description":"`+strings.Repeat("d", 1100)+`"}`), http.StatusRequestEntityTooLarge)
	requireStatus(t, h.spawn("chat", "big", `{"tags":{"t":"`+strings.Repeat("t", 1100)+`"}}`), http.StatusRequestEntityTooLarge)
}

func TestSendComposerLimits(t *testing.T) {
	h := setup(t, testserver.Options{Limits: inbox.Limits{Composer: composer.Limits{MaxSourceUnits: 10, MaxNodes: 2}}})
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)
	send := func(payload string) *response {
		return h.send("/chat/one", `{"type":"composer_input","payload":`+payload+`}`)
	}

	h.mustSend("/chat/one", `{"type":"composer_input","payload":{"source":"0123456789"}}`)
	// 10 UTF-16 units: five emoji.
	h.mustSend("/chat/one", `{"type":"composer_input","payload":{"source":"😀😀😀😀😀"}}`)
	requireValidationFailed(t, send(`{"source":"01234567890"}`),
		detail{"/source", "must be at most 10 characters (UTF-16 code units)"})
	requireValidationFailed(t, send(`{"source":"😀😀😀😀😀x"}`),
		detail{"/source", "must be at most 10 characters (UTF-16 code units)"})
	requireValidationFailed(t, send(`{"source":"abc","nodes":[{"kind":"text","start":0,"end":1,"raw":"a"},
		{"kind":"text","start":1,"end":2,"raw":"b"},{"kind":"text","start":2,"end":3,"raw":"c"}]}`),
		detail{"/nodes", "must contain at most 2 nodes"})
	require.Len(t, ofType(h.events("/chat/one"), "inbox"), 2)
}

func TestSendIdempotencyKey(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)
	h.mustSpawn("chat", "two", nil)

	first := h.mustSend("/chat/one", `{"key":"k1","payload":{"a":1,"b":[1,2]}}`)
	require.Equal(t, first, h.mustSend("/chat/one", `{"key":"k1","payload":{"a":1,"b":[1,2]}}`))
	// Insignificant whitespace does not make another message.
	require.Equal(t, first, h.mustSend("/chat/one", `{ "payload" : { "a" : 1, "b" : [ 1, 2 ] }, "key":"k1" }`))

	requireError(t, h.send("/chat/one", `{"key":"k1","payload":{"a":2,"b":[1,2]}}`), http.StatusConflict,
		"IDEMPOTENCY_KEY_REUSED",
		"This key was already used for a different message to this entity; use a new key for a new message")
	requireStatus(t, h.send("/chat/one", `{"key":"k1","payload":{"a":1,"b":[1,2]},"mode":"queued"}`), http.StatusConflict)

	msgs := ofType(h.events("/chat/one"), "inbox")
	require.Len(t, msgs, 1)
	require.Equal(t, "k1", msgs[0].Key)
	require.Equal(t, first, msgs[0].Headers["txid"])
	require.JSONEq(t, `{"a":1,"b":[1,2]}`, string(msgs[0].Value["payload"]))

	// Keys are per entity.
	other := h.mustSend("/chat/two", `{"key":"k1","payload":{"a":2}}`)
	require.NotEqual(t, first, other)
	require.Len(t, ofType(h.events("/chat/two"), "inbox"), 1)
}

// A send retried with its key answers the first send's {txid, offset}: the offset just
// after the original message, not the tail it finds (after replies and later messages),
// so a client that retries and follows the stream from there misses nothing.
func TestRetriedSendAnswersItsOriginalOffset(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)
	sent := func(body string) map[string]string {
		t.Helper()
		r := h.send("/chat/one", body)
		requireStatus(t, r, http.StatusOK)
		var out map[string]string
		require.NoError(t, json.Unmarshal(r.Body, &out))
		return out
	}
	first := sent(`{"key":"k1","payload":"first"}`)
	later := sent(`{"key":"k2","payload":"later"}`)
	require.NotEqual(t, first["offset"], later["offset"])
	retried := sent(`{"key":"k1","payload":"first"}`)
	require.Equal(t, first, retried, "the retry answers the first send's txid and offset")

	// reading from that offset starts with what came after the original message
	next := h.do(http.MethodGet, "/chat/one/main?offset="+retried["offset"], nil)
	requireStatus(t, next, http.StatusOK)
	after := ofType(parseEvents(t, next.Body), "inbox")
	require.Len(t, after, 1)
	require.Equal(t, "k2", after[0].Key)
}

func TestSendSeesSchemaAmendments(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d","inbox_schemas":{"a":{"type":"string"}}}`)
	h.mustSpawn("chat", "one", nil)

	requireError(t, h.send("/chat/one", `{"type":"b","payload":1}`), http.StatusUnprocessableEntity,
		"UNKNOWN_MESSAGE_TYPE", "Unknown message type: b")
	requireStatus(t, h.do(http.MethodPatch, typesPath+"/chat/schemas", `{"inbox_schemas":{"b":{"type":"number"}}}`),
		http.StatusOK)

	h.mustSend("/chat/one", `{"type":"b","payload":1}`)
	requireValidationFailed(t, h.send("/chat/one", `{"type":"b","payload":"x"}`), detail{"/", "must be number"})
	h.mustSend("/chat/one", `{"type":"a","payload":"still here"}`)
}

func TestSendToEntityOfDeletedType(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d","inbox_schemas":{"a":{"type":"string"}}}`)
	h.mustSpawn("chat", "one", nil)
	requireStatus(t, h.do(http.MethodDelete, typesPath+"/chat", nil), http.StatusNoContent)

	// The entity lives on, validated by the schemas it was spawned with.
	require.Equal(t, "idle", h.status("/chat/one"))
	h.mustSend("/chat/one", `{"type":"a","payload":"ok"}`)
	requireValidationFailed(t, h.send("/chat/one", `{"type":"a","payload":1}`), detail{"/", "must be string"})
	requireError(t, h.send("/chat/one", `{"type":"b","payload":1}`), http.StatusUnprocessableEntity,
		"UNKNOWN_MESSAGE_TYPE", "Unknown message type: b")
	h.mustSend("/chat/one", `{"type":"composer_input","payload":{"source":"x"}}`)
	require.Len(t, ofType(h.events("/chat/one"), "inbox"), 2)

	// A new entity of the deleted type cannot be spawned.
	requireError(t, h.spawn("chat", "two", nil), http.StatusNotFound, "UNKNOWN_ENTITY_TYPE", "Entity type not found: chat")
}

func TestConcurrentSendsToOneEntity(t *testing.T) {
	// One message per catch-up read, so that each read's Stream-Next-Offset is the end
	// offset of exactly one message.
	h := setup(t, testserver.Options{Streams: streamdb.Options{MaxReadBytes: 1}})
	h.registerType(chatType)
	h.mustSpawn("chat", "one", nil)

	const n = 20
	txids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := h.send("/chat/one", fmt.Sprintf(`{"payload":{"i":%d}}`, i))
			if r.Status != http.StatusOK {
				t.Errorf("send %d: %d %s", i, r.Status, r.Body)
				return
			}
			var out map[string]string
			if err := json.Unmarshal(r.Body, &out); err != nil {
				t.Errorf("send %d: %v", i, err)
				return
			}
			txids[i] = out["txid"]
		})
	}
	wg.Wait()
	require.False(t, t.Failed())

	// Walk the stream one message at a time: sequence numbers go up by one with no gap,
	// byte positions strictly increase.
	var events []event
	offset, prevSeq, prevPos := "-1", int64(0), int64(0)
	for {
		r := h.do(http.MethodGet, "/chat/one/main?offset="+offset, nil)
		requireStatus(t, r, http.StatusOK)
		page := parseEvents(t, r.Body)
		require.Len(t, page, 1, "MaxReadBytes 1 returns one message per read")
		events = append(events, page...)
		next := r.Header.Get("Stream-Next-Offset")
		m := offsetRe.FindStringSubmatch(next)
		require.NotNil(t, m, "offset %q is <16 digits>_<16 digits>", next)
		seq, _ := strconv.ParseInt(m[1], 10, 64)
		pos, _ := strconv.ParseInt(m[2], 10, 64)
		require.Equal(t, prevSeq+1, seq, "no gap after %s", offset)
		require.Greater(t, pos, prevPos)
		prevSeq, prevPos, offset = seq, pos, next
		if r.Header.Get("Stream-Up-To-Date") == "true" {
			break
		}
	}
	require.Equal(t, int64(3+n), prevSeq)
	require.Equal(t, events, h.events("/chat/one"), "paged and whole reads agree")

	msgs := ofType(events, "inbox")
	require.Len(t, msgs, n)
	seen := map[string]bool{}
	payloads := map[string]bool{}
	for _, m := range msgs {
		seen[m.Headers["txid"]] = true
		payloads[string(m.Value["payload"])] = true
	}
	require.Len(t, seen, n, "distinct txids")
	require.Len(t, payloads, n)
	for _, txid := range txids {
		require.True(t, seen[txid], "txid %s of a 200 is on the stream", txid)
	}
}

func TestErrorEnvelopeOnUnknownRoutes(t *testing.T) {
	h := setup(t)
	requireError(t, h.do(http.MethodGet, "/_electric/nothing-here", nil), http.StatusNotFound, "NOT_FOUND",
		"No route for GET /_electric/nothing-here")
	r := h.do(http.MethodPatch, typesPath, `{}`)
	e := requireError(t, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "Method PATCH is not allowed on "+typesPath)
	require.Empty(t, e.Details)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{16}$`), r.Header.Get("X-Request-Id"))
}

func TestConcurrentRetriesWithOneKey(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)
	h.mustSpawn("chat", "two", nil)

	// The same message retried concurrently: every retry gets the one txid and offset,
	// whether it met the first send in the same group commit or after it.
	const n = 10
	res := make([]*response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { res[i] = h.send("/chat/one", `{"key":"same","payload":{"x":1}}`) })
	}
	wg.Wait()
	txids, offsets := map[string]bool{}, map[string]bool{}
	for _, r := range res {
		requireStatus(t, r, http.StatusOK)
		var out map[string]string
		r.decode(t, &out)
		txids[out["txid"]] = true
		offsets[out["offset"]] = true
	}
	require.Len(t, txids, 1)
	require.Len(t, offsets, 1)
	msgs := ofType(h.events("/chat/one"), "inbox")
	require.Len(t, msgs, 1)
	require.True(t, txids[msgs[0].Headers["txid"]])

	// Different messages racing for one key: one wins, the others are refused.
	for i := range n {
		wg.Go(func() { res[i] = h.send("/chat/two", fmt.Sprintf(`{"key":"same","payload":{"x":%d}}`, i)) })
	}
	wg.Wait()
	ok := 0
	for _, r := range res {
		if r.Status == http.StatusOK {
			ok++
			continue
		}
		requireError(t, r, http.StatusConflict, "IDEMPOTENCY_KEY_REUSED",
			"This key was already used for a different message to this entity; use a new key for a new message")
	}
	require.Equal(t, 1, ok)
	require.Len(t, ofType(h.events("/chat/two"), "inbox"), 1)
}

func TestSendsRacingAKill(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)

	const n = 30
	res := make([]*response, n)
	var kill *response
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { res[i] = h.send("/chat/one", fmt.Sprintf(`{"payload":%d}`, i)) })
		if i == n/2 {
			wg.Go(func() { kill = h.do(http.MethodDelete, entitiesPath+"/chat/one", nil) })
		}
	}
	wg.Wait()
	requireStatus(t, kill, http.StatusOK)
	accepted := map[string]bool{}
	for _, r := range res {
		if r.Status == http.StatusOK {
			var out map[string]string
			r.decode(t, &out)
			accepted[out["txid"]] = true
			continue
		}
		requireError(t, r, http.StatusConflict, "NOT_RUNNING", "Entity is not accepting writes")
	}

	// Every accepted send, and only those, is on the stream, all before the kill.
	read := h.readStream("/chat/one")
	require.Equal(t, "true", read.Last.Header.Get("Stream-Closed"))
	events := read.Events
	require.Equal(t, "signal", events[len(events)-1].Type)
	msgs := ofType(events, "inbox")
	require.Len(t, msgs, len(accepted))
	for _, m := range msgs {
		require.True(t, accepted[m.Headers["txid"]])
	}
	require.Equal(t, len(msgs)+2, len(events))
}

// The send's offset is the stream's tail just after the message: a reader following
// from it sees the next event and not the message itself.
func TestSendAnswersTheOffsetAfterTheMessage(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)
	r := h.send("/chat/one", `{"type":"note","payload":{"n":1}}`)
	requireStatus(t, r, http.StatusOK)
	var first map[string]string
	r.decode(t, &first)
	head := h.do(http.MethodHead, "/chat/one/main", nil)
	require.Equal(t, first["offset"], head.Header.Get("Stream-Next-Offset"))

	h.mustSend("/chat/one", `{"type":"note","payload":{"n":2}}`)
	after := h.do(http.MethodGet, "/chat/one/main?offset="+first["offset"], nil)
	requireStatus(t, after, http.StatusOK)
	var events []struct {
		Type  string `json:"type"`
		Value struct {
			Payload json.RawMessage `json:"payload"`
		} `json:"value"`
	}
	require.NoError(t, json.Unmarshal(after.Body, &events))
	require.Len(t, events, 1)
	require.Equal(t, "inbox", events[0].Type)
	require.JSONEq(t, `{"n":2}`, string(events[0].Value.Payload))
}
