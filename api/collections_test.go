package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
)

// collectionsType declares the UI's comments collection (insert only, the default) and
// a notes collection open to every operation, with state schemas for both event types.
const collectionsType = `{"name":"chat","description":"d",
	"state_schemas":{
		"comment":{"type":"object","properties":{"body":{"type":"string"},"timestamp":{"type":"string"}},"required":["body","timestamp"]},
		"note":{"type":"object"}},
	"externally_writable_collections":{
		"comments":{"type":"comment","contract":"comments/v1"},
		"notes":{"type":"note","operations":["insert","update","delete"]},
		"loose":{"type":"undeclared"}}}`

// TestWriteCollection: what the UI's Comments view sends is appended to the entity's
// main stream with the writer's principal; operations and collections outside the type's
// allow-list are refused with 403 UNAUTHORIZED; values are checked against the state
// schema of their event type.
func TestWriteCollection(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true})
	h.registerType(collectionsType)
	h.mustSpawn("chat", "c1", `{}`)
	const coll = entitiesPath + "/chat/c1/collections/"

	// the UI's comment: an insert with a client key
	res := h.do(http.MethodPost, coll+"comments", `{"operation":"insert","key":"client-1","value":{"body":"Looks good","timestamp":"2026-11-27T10:00:00.000Z","reply_to":{"kind":"comment","key":"c0"}}}`)
	requireStatus(t, res, http.StatusCreated)
	require.JSONEq(t, `{"key":"client-1"}`, string(res.Body))
	// without a key, one is made
	res = h.do(http.MethodPost, coll+"comments", `{"operation":"insert","value":{"body":"b","timestamp":"t"}}`)
	requireStatus(t, res, http.StatusCreated)
	var made struct{ Key string }
	res.decode(t, &made)
	require.True(t, strings.HasPrefix(made.Key, "comments-"), made.Key)
	require.Regexp(t, uuidRe, strings.TrimPrefix(made.Key, "comments-"))

	events := h.rawEvents("/chat/c1")
	got := eventWithKey(t, events, "comment", "client-1")
	require.Len(t, got, 1)
	require.JSONEq(t, `{"body":"Looks good","timestamp":"2026-11-27T10:00:00.000Z","reply_to":{"kind":"comment","key":"c0"}}`, string(got[0]["value"]))
	var headers struct {
		Operation string `json:"operation"`
		Timestamp string `json:"timestamp"`
		Principal struct{ URL, Kind, ID string }
	}
	require.NoError(t, json.Unmarshal(got[0]["headers"], &headers))
	require.Equal(t, "insert", headers.Operation)
	requireISOTime(t, json.RawMessage(`"`+headers.Timestamp+`"`))
	require.Equal(t, devPrincipal, headers.Principal.URL)
	require.Equal(t, "system", headers.Principal.Kind)
	require.Equal(t, "dev-local", headers.Principal.ID)
	require.Len(t, eventWithKey(t, events, "comment", made.Key), 1)

	// refusals: 403 for what the allow-list does not give
	requireError(t, h.do(http.MethodPost, coll+"comments", `{"operation":"update","key":"client-1","value":{"body":"x","timestamp":"t"}}`),
		http.StatusForbidden, "UNAUTHORIZED", `Operation "update" is not allowed on collection "comments"`)
	requireError(t, h.do(http.MethodPost, coll+"comments", `{"operation":"delete","key":"client-1"}`),
		http.StatusForbidden, "UNAUTHORIZED", `Operation "delete" is not allowed on collection "comments"`)
	requireError(t, h.do(http.MethodPost, coll+"texts", `{"operation":"insert","value":{}}`),
		http.StatusForbidden, "UNAUTHORIZED", `Collection "texts" is not writable`)
	// the value must match the state schema; an event type the schemas do not declare is unknown
	requireStatus(t, h.do(http.MethodPost, coll+"comments", `{"operation":"insert","value":{"body":5,"timestamp":"t"}}`), http.StatusUnprocessableEntity)
	requireError(t, h.do(http.MethodPost, coll+"loose", `{"operation":"insert","value":{}}`),
		http.StatusUnprocessableEntity, "UNKNOWN_EVENT_TYPE", `Unknown event type "undeclared"`)
	// the body
	requireStatus(t, h.do(http.MethodPost, coll+"notes", `{"operation":"upsert","key":"n","value":{}}`), http.StatusBadRequest)
	requireStatus(t, h.do(http.MethodPost, coll+"notes", `{"key":"n","value":{}}`), http.StatusBadRequest)
	requireStatus(t, h.do(http.MethodPost, coll+"notes", `{"operation":"insert","value":{},"extra":1}`), http.StatusBadRequest)
	requireStatus(t, h.do(http.MethodPost, coll+"notes", `{"operation":"insert","value":[1]}`), http.StatusBadRequest)
	requireError(t, h.do(http.MethodPost, coll+"notes", `{"operation":"insert"}`), http.StatusBadRequest, "INVALID_REQUEST", "value is required for insert")
	requireError(t, h.do(http.MethodPost, coll+"notes", `{"operation":"update","value":{}}`), http.StatusBadRequest, "INVALID_REQUEST", "key is required for update")
	requireError(t, h.do(http.MethodPost, coll+"notes", `{"operation":"delete"}`), http.StatusBadRequest, "INVALID_REQUEST", "key is required for delete")
	requireStatus(t, h.do(http.MethodPost, coll+"notes", `{"operation":"insert","key":"`+strings.Repeat("k", 257)+`","value":{}}`), http.StatusBadRequest)
	before := len(h.rawEvents("/chat/c1"))

	// a collection open to every operation: 200 for update and delete
	requireStatus(t, h.do(http.MethodPost, coll+"notes", `{"operation":"insert","key":"n1","value":{"v":1}}`), http.StatusCreated)
	res = h.do(http.MethodPost, coll+"notes", `{"operation":"update","key":"n1","value":{"v":2}}`)
	requireStatus(t, res, http.StatusOK)
	require.JSONEq(t, `{"key":"n1"}`, string(res.Body))
	requireStatus(t, h.do(http.MethodPost, coll+"notes", `{"operation":"delete","key":"n1"}`), http.StatusOK)
	events = h.rawEvents("/chat/c1")
	require.Len(t, events, before+3, "the refusals wrote nothing; the three writes one event each")
	notes := eventWithKey(t, events, "note", "n1")
	require.Len(t, notes, 3)
	for i, op := range []string{"insert", "update", "delete"} {
		require.Contains(t, string(notes[i]["headers"]), `"operation":"`+op+`"`)
	}
	require.Nil(t, notes[2]["value"], "a delete carries no value")

	// the entity's read shows the allow-list; a killed entity takes no writes
	require.Contains(t, string(h.getEntity("/chat/c1")["externally_writable_collections"]), `"comments"`)
	requireStatus(t, h.do(http.MethodDelete, entitiesPath+"/chat/c1", nil), http.StatusOK)
	requireError(t, h.do(http.MethodPost, coll+"comments", `{"operation":"insert","value":{"body":"b","timestamp":"t"}}`),
		http.StatusConflict, "NOT_RUNNING", "Entity is not accepting writes")
}

// TestWriteCollectionNeedsWrite: the write permission on the entity is asked first (401
// for a principal without it, as every entity route answers), then the allow-list.
func TestWriteCollectionNeedsWrite(t *testing.T) {
	s := startJWT(t)
	s.must(t, "user:alice", "POST", "/_electric/entity-types", collectionsType, http.StatusCreated)
	s.must(t, "user:alice", "PUT", "/_electric/entities/chat/c1", `{}`, http.StatusCreated)
	s.must(t, "user:alice", "POST", "/_electric/entities/chat/c1/grants",
		`{"subject_kind":"principal","subject_value":"user:rita","permission":"read"}`, http.StatusCreated)
	s.must(t, "user:alice", "POST", "/_electric/entities/chat/c1/grants",
		`{"subject_kind":"principal","subject_value":"user:will","permission":"write"}`, http.StatusCreated)
	const body = `{"operation":"insert","value":{"body":"hi","timestamp":"t"}}`
	s.must(t, "", "POST", "/_electric/entities/chat/c1/collections/comments", body, http.StatusUnauthorized)
	s.must(t, "user:bob", "POST", "/_electric/entities/chat/c1/collections/comments", body, http.StatusUnauthorized)
	s.must(t, "user:rita", "POST", "/_electric/entities/chat/c1/collections/comments", body, http.StatusUnauthorized)
	s.must(t, "user:bob", "POST", "/_electric/entities/chat/c1/collections/nope", body, http.StatusUnauthorized)
	out := s.must(t, "user:will", "POST", "/_electric/entities/chat/c1/collections/comments", body, http.StatusCreated)
	require.Contains(t, out, `"key":"comments-`)
	read := s.must(t, "user:alice", "GET", "/chat/c1/main?offset=-1", "", http.StatusOK)
	require.Contains(t, read, `"principal":{"url":"/principal/user%3Awill","kind":"user","id":"will"}`)
}

// TestWritableCollectionsAtRegistration: a type's externally_writable_collections are
// checked as the reference checks them: their shape (400 with details), and "comments"
// only with the comments/v1 contract and that contract only as "comments" (400).
func TestWritableCollectionsAtRegistration(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true})
	reg := func(ewc string) *response {
		return h.do(http.MethodPost, typesPath, `{"name":"t","description":"d","externally_writable_collections":`+ewc+`}`)
	}
	requireError(t, reg(`{"comments":{"type":"comment"}}`), http.StatusBadRequest, "INVALID_REQUEST",
		`The externally-writable collection name "comments" is reserved for the "comments/v1" contract`)
	requireError(t, reg(`{"remarks":{"type":"comment","contract":"comments/v1"}}`), http.StatusBadRequest, "INVALID_REQUEST",
		`The "comments/v1" contract must be registered under the collection name "comments"`)
	requireDetails(t, reg(`{"notes":{"type":"note","operations":["insert","upsert"],"extra":1}}`), http.StatusBadRequest,
		"INVALID_REQUEST", "Request body does not match API schema",
		detail{Path: "/externally_writable_collections/notes/extra", Message: "must NOT have additional properties"},
		detail{Path: "/externally_writable_collections/notes/operations/1", Message: "must be equal to one of the allowed values"})
	for _, bad := range []string{`[]`, `{"notes":"note"}`, `{"notes":{}}`, `{"notes":{"type":5}}`, `{"notes":{"type":"n","operations":"insert"}}`,
		`{"":{"type":"n"}}`, `{"` + strings.Repeat("c", 257) + `":{"type":"n"}}`} {
		requireStatus(t, reg(bad), http.StatusBadRequest)
	}
	requireStatus(t, reg(`{"comments":{"type":"comment","contract":"comments/v1","principalColumn":"author"},"notes":{"type":"note","operations":[]}}`), http.StatusCreated)
}
