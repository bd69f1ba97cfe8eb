package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
)

const (
	typesPath    = "/_electric/entity-types"
	entitiesPath = "/_electric/entities"
	devPrincipal = "/principal/system%3Adev-local"
)

var (
	uuidRe   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	offsetRe = regexp.MustCompile(`^(\d{16})_(\d{16})$`)
)

// harness is one test server on its own freshly migrated database, plus an HTTP client.
type harness struct {
	t   *testing.T
	srv *testserver.Server
}

// setup starts a server for t (parallel with the other tests of the package).
func setup(t *testing.T, opts ...testserver.Options) *harness {
	t.Helper()
	t.Parallel()
	var o testserver.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	return &harness{t: t, srv: testserver.Start(t, o)}
}

// response is a fully read HTTP response.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request. body is nil (no body), a string or []byte (sent as is), or any
// other value (sent as its JSON). headers are name/value pairs.
func (h *harness) do(method, path string, body any, headers ...string) *response {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(h.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	require.NoError(h.t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	require.Zero(h.t, len(headers)%2, "headers are name/value pairs")
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(h.t, err)
	return &response{Status: res.StatusCode, Header: res.Header, Body: data}
}

// object decodes the body as a JSON object, keeping every member's bytes.
func (r *response) object(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	return m
}

func (r *response) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.Body, v), "body: %s", r.Body)
}

// requireStatus fails with the body in the message, which is what one wants to see.
func requireStatus(t *testing.T, r *response, status int) {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Body)
}

type detail struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

type apiError struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Details []detail `json:"details"`
}

// requireError checks an error response: status, content type, the envelope
// {"error":{"code","message","details"?}} and nothing else, code and message. It returns
// the decoded error for checks on details.
func requireError(t *testing.T, r *response, status int, code, message string) apiError {
	t.Helper()
	requireStatus(t, r, status)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	var outer map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.Body, &outer), "body: %s", r.Body)
	require.Len(t, outer, 1, "the envelope has only \"error\": %s", r.Body)
	var inner map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(outer["error"], &inner), "body: %s", r.Body)
	for k := range inner {
		require.Contains(t, []string{"code", "message", "details"}, k, "body: %s", r.Body)
	}
	var e apiError
	dec := json.NewDecoder(bytes.NewReader(outer["error"]))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&e))
	require.Equal(t, code, e.Code, "body: %s", r.Body)
	require.Equal(t, message, e.Message, "body: %s", r.Body)
	if d, ok := inner["details"]; ok {
		require.NotEqual(t, "null", string(d), "details, when present, is an array")
	}
	return e
}

// requireDetails checks an error response including its exact details.
func requireDetails(t *testing.T, r *response, status int, code, message string, want ...detail) {
	t.Helper()
	e := requireError(t, r, status, code, message)
	require.Equal(t, want, e.Details, "body: %s", r.Body)
}

// requireSchemaMismatch is the 400 of a body that does not match the route's schema.
func requireSchemaMismatch(t *testing.T, r *response, want ...detail) {
	t.Helper()
	requireDetails(t, r, http.StatusBadRequest, "INVALID_REQUEST", "Request body does not match API schema", want...)
}

// requireValidationFailed is the 422 SCHEMA_VALIDATION_FAILED with exactly want.
func requireValidationFailed(t *testing.T, r *response, want ...detail) {
	t.Helper()
	requireDetails(t, r, http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED", "Validation failed", want...)
}

// registerType registers a type from a raw JSON body and requires 201.
func (h *harness) registerType(body string) map[string]json.RawMessage {
	h.t.Helper()
	r := h.do(http.MethodPost, typesPath, body)
	requireStatus(h.t, r, http.StatusCreated)
	return r.object(h.t)
}

// spawn is PUT /_electric/entities/<typ>/<id>.
func (h *harness) spawn(typ, id string, body any) *response {
	h.t.Helper()
	if body == nil {
		body = "{}"
	}
	return h.do(http.MethodPut, entitiesPath+"/"+typ+"/"+id, body)
}

// mustSpawn spawns and requires 201.
func (h *harness) mustSpawn(typ, id string, body any) map[string]json.RawMessage {
	h.t.Helper()
	r := h.spawn(typ, id, body)
	requireStatus(h.t, r, http.StatusCreated)
	return r.object(h.t)
}

// send is POST /_electric/entities<url>/send.
func (h *harness) send(url string, body any, headers ...string) *response {
	h.t.Helper()
	return h.do(http.MethodPost, entitiesPath+url+"/send", body, headers...)
}

// mustSend sends and requires 200 {"txid":"<uuid>"}; it returns the txid.
func (h *harness) mustSend(url string, body any, headers ...string) string {
	h.t.Helper()
	r := h.send(url, body, headers...)
	requireStatus(h.t, r, http.StatusOK)
	var out map[string]string
	r.decode(h.t, &out)
	require.Len(h.t, out, 2, "body: %s", r.Body)
	require.Regexp(h.t, uuidRe, out["txid"])
	require.Regexp(h.t, offsetRe, out["offset"])
	return out["txid"]
}

// signal is POST /_electric/entities<url>/signal.
func (h *harness) signal(url string, body any) *response {
	h.t.Helper()
	return h.do(http.MethodPost, entitiesPath+url+"/signal", body)
}

// getEntity reads the public entity JSON and requires 200.
func (h *harness) getEntity(url string) map[string]json.RawMessage {
	h.t.Helper()
	r := h.do(http.MethodGet, entitiesPath+url, nil)
	requireStatus(h.t, r, http.StatusOK)
	return r.object(h.t)
}

func (h *harness) status(url string) string {
	h.t.Helper()
	return str(h.t, h.getEntity(url)["status"])
}

// event is one State Protocol event read back from a stream.
type event struct {
	Raw     json.RawMessage            // the event's bytes as stored
	Type    string                     `json:"type"`
	Key     string                     `json:"key"`
	Value   map[string]json.RawMessage `json:"value"`
	Headers map[string]string          `json:"headers"`
}

// streamRead is the outcome of reading a stream to its tail.
type streamRead struct {
	Events []event
	Last   *response // the last page read
}

// readStream reads the whole main stream of an entity (GET <url>/main?offset=-1, then
// on from Stream-Next-Offset until Stream-Up-To-Date).
func (h *harness) readStream(url string) streamRead {
	h.t.Helper()
	var out streamRead
	offset := "-1"
	for {
		r := h.do(http.MethodGet, url+"/main?offset="+offset, nil)
		requireStatus(h.t, r, http.StatusOK)
		require.Equal(h.t, "application/json", r.Header.Get("Content-Type"))
		out.Events = append(out.Events, parseEvents(h.t, r.Body)...)
		out.Last = r
		if r.Header.Get("Stream-Up-To-Date") == "true" {
			return out
		}
		next := r.Header.Get("Stream-Next-Offset")
		require.NotEqual(h.t, offset, next, "a read that is not up to date must advance")
		offset = next
	}
}

func (h *harness) events(url string) []event {
	h.t.Helper()
	return h.readStream(url).Events
}

func parseEvents(t *testing.T, body []byte) []event {
	t.Helper()
	var raws []json.RawMessage
	require.NoError(t, json.Unmarshal(body, &raws), "stream body: %s", body)
	out := make([]event, len(raws))
	for i, raw := range raws {
		require.NoError(t, json.Unmarshal(raw, &out[i]), "event: %s", raw)
		out[i].Raw = raw
	}
	return out
}

// servedOffset is the headers.offset a read adds to a State Protocol event (last in its
// headers: the stored event has none).
var servedOffset = regexp.MustCompile(`,"offset":"\d{16}_\d{16}"`)

// stored is an event read from a stream as it is stored: without the offset the read
// served it with (which differs between the streams an event is written to).
func stored(raw json.RawMessage) string { return servedOffset.ReplaceAllString(string(raw), "") }

// ofType keeps the events of one type.
func ofType(events []event, typ string) []event {
	var out []event
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func types(events []event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

// str decodes a JSON string member.
func str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal(raw, &s), "not a string: %s", raw)
	return s
}

// integer decodes a JSON member that must be an integer number (not a string).
func integer(t *testing.T, raw json.RawMessage) int64 {
	t.Helper()
	n, err := strconv.ParseInt(string(raw), 10, 64)
	require.NoError(t, err, "not an integer: %s", raw)
	return n
}

// requireISOTime checks a JSON string member holding an ISO 8601 timestamp near now.
func requireISOTime(t *testing.T, raw json.RawMessage) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, str(t, raw))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), ts, time.Minute)
	return ts
}

// requireMillis checks a JSON number member holding milliseconds since the epoch near now.
func requireMillis(t *testing.T, raw json.RawMessage) {
	t.Helper()
	require.WithinDuration(t, time.Now(), time.UnixMilli(integer(t, raw)), time.Minute)
}

// keys returns the member names of an object.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// compact re-renders JSON without insignificant whitespace, for comparisons that are
// about content, not bytes.
func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, raw), "invalid JSON: %s", raw)
	return b.String()
}

// testserverQuiet is a server that logs nothing (for tests that provoke errors).
func testserverQuiet() testserver.Options { return testserver.Options{QuietLogs: true} }
