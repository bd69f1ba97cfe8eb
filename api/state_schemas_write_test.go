package api_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeEvents appends body to the main stream of the entity at url with token.
func (h *harness) writeEvents(url, token, body string) *response {
	h.t.Helper()
	return h.do(http.MethodPost, url+"/main", body, "Authorization", "Bearer "+token)
}

// spawnToken spawns typ/id and returns its write token.
func (h *harness) spawnToken(typ, id string) string {
	h.t.Helper()
	r := h.spawn(typ, id, nil)
	requireStatus(h.t, r, http.StatusCreated)
	tok := r.Header.Get("X-Write-Token")
	require.NotEmpty(h.t, tok)
	return tok
}

const resultSchemas = `"state_schemas":{"result":{"type":"object","properties":{"value":{"type":"number"}},"required":["value"]}}`

// TestStateSchemasOnDirectWrites: with state_schemas declared, a direct write of an
// undeclared event type is 422 UNKNOWN_EVENT_TYPE, a value that fails its schema 422
// SCHEMA_VALIDATION_FAILED with the validator's details (a delete's old_value is what is
// checked), and a batch with one bad event writes none of it.
func TestStateSchemasOnDirectWrites(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"calc","description":"d",` + resultSchemas + `}`)
	tok := h.spawnToken("calc", "c1")

	r := h.writeEvents("/calc/c1", tok, `{"type":"unknown_event","key":"k","value":{"data":"x"},"headers":{"operation":"insert"}}`)
	requireDetails(t, r, http.StatusUnprocessableEntity, "UNKNOWN_EVENT_TYPE",
		`Unknown event type "unknown_event" (event 0): the entity type's state_schemas do not declare it`,
		detail{Path: "/0/type", Message: "must be an event type the entity type's state_schemas declare"})

	r = h.writeEvents("/calc/c1", tok, `{"type":"result","key":"k","value":{"wrong":"type"},"headers":{"operation":"insert"}}`)
	requireDetails(t, r, http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED",
		`Event 0 (type "result") does not match its state schema`,
		detail{Path: "/", Message: "must have required property 'value'"})
	r = h.writeEvents("/calc/c1", tok, `{"type":"result","key":"k","value":{"value":"seven"},"headers":{"operation":"update"}}`)
	requireDetails(t, r, http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED",
		`Event 0 (type "result") does not match its state schema`, detail{Path: "/value", Message: "must be number"})

	// a batch: the second event is refused, so neither is written
	r = h.writeEvents("/calc/c1", tok, `[{"type":"result","key":"a","value":{"value":1},"headers":{"operation":"insert"}},
		{"type":"nope","key":"b","value":{},"headers":{"operation":"insert"}}]`)
	e := requireError(t, r, http.StatusUnprocessableEntity, "UNKNOWN_EVENT_TYPE",
		`Unknown event type "nope" (event 1): the entity type's state_schemas do not declare it`)
	require.Equal(t, "/1/type", e.Details[0].Path)
	require.Equal(t, []string{"entity_created"}, types(h.events("/calc/c1")), "refused writes wrote nothing")

	requireStatus(t, h.writeEvents("/calc/c1", tok, `{"type":"result","key":"a","value":{"value":1},"headers":{"operation":"insert"}}`), http.StatusNoContent)
	// a delete: its old_value is checked when it has one; without one nothing is
	r = h.writeEvents("/calc/c1", tok, `{"type":"result","key":"a","old_value":{"value":"x"},"headers":{"operation":"delete"}}`)
	requireDetails(t, r, http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED",
		`Event 0 (type "result") does not match its state schema`, detail{Path: "/value", Message: "must be number"})
	requireStatus(t, h.writeEvents("/calc/c1", tok, `{"type":"result","key":"a","old_value":{"value":1},"headers":{"operation":"delete"}}`), http.StatusNoContent)
	requireStatus(t, h.writeEvents("/calc/c1", tok, `{"type":"result","key":"a","headers":{"operation":"delete"}}`), http.StatusNoContent)
	// an undeclared event type is refused even as a delete
	requireError(t, h.writeEvents("/calc/c1", tok, `{"type":"nope","key":"a","headers":{"operation":"delete"}}`),
		http.StatusUnprocessableEntity, "UNKNOWN_EVENT_TYPE", `Unknown event type "nope" (event 0): the entity type's state_schemas do not declare it`)
	require.Equal(t, []string{"entity_created", "result", "result", "result"}, types(h.events("/calc/c1")))
}

// TestStateSchemasBuiltinAndServerEvents: the runtime's own event types (run, step,
// text, text_delta, tool_call, …) pass when the type does not declare them and are
// validated when it does; the server's event types keep their own rule (a handler may not
// write slash_command rows: 422 INVALID_REQUEST, not UNKNOWN_EVENT_TYPE).
func TestStateSchemasBuiltinAndServerEvents(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"calc","description":"d",` + resultSchemas + `}`)
	tok := h.spawnToken("calc", "c1")
	for _, ev := range []string{
		`{"type":"run","key":"run-0","value":{"status":"started"},"headers":{"operation":"insert"}}`,
		`{"type":"step","key":"step-0","value":{"step_number":0,"status":"started"},"headers":{"operation":"insert"}}`,
		`{"type":"text","key":"t0","value":{"status":"streaming"},"headers":{"operation":"insert"}}`,
		`{"type":"text_delta","key":"t0:0","value":{"text_id":"t0","delta":"hi"},"headers":{"operation":"insert"}}`,
		`{"type":"tool_call","key":"tc0","value":{"tool_name":"x","status":"started"},"headers":{"operation":"insert"}}`,
		`{"type":"reasoning","key":"r0","value":{},"headers":{"operation":"insert"}}`,
		`{"type":"error","key":"e0","value":{"message":"m"},"headers":{"operation":"insert"}}`,
		`{"type":"manifest","key":"m0","value":{"kind":"child"},"headers":{"operation":"insert"}}`,
		`{"type":"run","key":"run-0","value":{"status":"completed"},"headers":{"operation":"update"}}`,
	} {
		requireStatus(t, h.writeEvents("/calc/c1", tok, ev), http.StatusNoContent)
	}
	requireError(t, h.writeEvents("/calc/c1", tok, `{"type":"slash_command","key":"x","value":{"name":"x"},"headers":{"operation":"insert"}}`),
		http.StatusUnprocessableEntity, "INVALID_REQUEST", `A write token writes the handler's own events: event 0: "slash_command" events are written by the server only`)

	// a type that declares "run" has its runs validated
	h.registerType(`{"name":"strict","description":"d","state_schemas":{"run":{"type":"object","properties":{"status":{"enum":["started","completed","failed"]}},"required":["status"]}}}`)
	st := h.spawnToken("strict", "s1")
	requireStatus(t, h.writeEvents("/strict/s1", st, `{"type":"run","key":"run-0","value":{"status":"started"},"headers":{"operation":"insert"}}`), http.StatusNoContent)
	requireDetails(t, h.writeEvents("/strict/s1", st, `{"type":"run","key":"run-0","value":{"status":"bogus"},"headers":{"operation":"update"}}`),
		http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED", `Event 0 (type "run") does not match its state schema`,
		detail{Path: "/status", Message: "must be equal to one of the allowed values"})
	// state_schemas {} declares no custom type: the built-in ones still pass
	h.registerType(`{"name":"empty","description":"d","state_schemas":{}}`)
	et := h.spawnToken("empty", "e1")
	requireStatus(t, h.writeEvents("/empty/e1", et, `{"type":"text","key":"t","value":{},"headers":{"operation":"insert"}}`), http.StatusNoContent)
	requireError(t, h.writeEvents("/empty/e1", et, `{"type":"note","key":"n","value":{},"headers":{"operation":"insert"}}`),
		http.StatusUnprocessableEntity, "UNKNOWN_EVENT_TYPE", `Unknown event type "note" (event 0): the entity type's state_schemas do not declare it`)
}

// TestStateSchemasAbsentAcceptAnything: a type without state_schemas takes any event a
// handler may write.
func TestStateSchemasAbsentAcceptAnything(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"free","description":"d"}`)
	tok := h.spawnToken("free", "f1")
	requireStatus(t, h.writeEvents("/free/f1", tok, `{"type":"anything","key":"k","value":{"goes":true},"headers":{"operation":"insert"}}`), http.StatusNoContent)
	requireStatus(t, h.writeEvents("/free/f1", tok, `{"type":"research_result","key":"k","value":[1,"x"],"headers":{"operation":"insert"}}`), http.StatusNoContent)
}

// TestStateSchemasFollowTheType: the effective schemas are the current type's overlaid on
// the entity's snapshot: an amendment reaches an existing entity, a re-registration's
// schema replaces the old one, and an entity whose type was deleted keeps the schemas it
// was spawned with.
func TestStateSchemasFollowTheType(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"calc","description":"d",` + resultSchemas + `}`)
	tok := h.spawnToken("calc", "c1")
	note := `{"type":"note","key":"n","value":{"text":"t"},"headers":{"operation":"insert"}}`
	requireError(t, h.writeEvents("/calc/c1", tok, note), http.StatusUnprocessableEntity, "UNKNOWN_EVENT_TYPE",
		`Unknown event type "note" (event 0): the entity type's state_schemas do not declare it`)
	r := h.do(http.MethodPatch, typesPath+"/calc/schemas", `{"state_schemas":{"note":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}`)
	requireStatus(t, r, http.StatusOK)
	requireStatus(t, h.writeEvents("/calc/c1", tok, note), http.StatusNoContent)
	requireError(t, h.writeEvents("/calc/c1", tok, `{"type":"note","key":"n","value":{"text":1},"headers":{"operation":"update"}}`),
		http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED", `Event 0 (type "note") does not match its state schema`)

	// re-registered with a stricter result schema: the new one is used at once
	h.registerType(`{"name":"calc","description":"d","state_schemas":{"result":{"type":"object","properties":{"value":{"type":"integer"}},"required":["value"]}}}`)
	requireError(t, h.writeEvents("/calc/c1", tok, `{"type":"result","key":"r","value":{"value":1.5},"headers":{"operation":"insert"}}`),
		http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED", `Event 0 (type "result") does not match its state schema`)

	// the type deleted: the entity's snapshot (result as a number) still decides
	requireStatus(t, h.do(http.MethodDelete, typesPath+"/calc", nil), http.StatusNoContent)
	requireStatus(t, h.writeEvents("/calc/c1", tok, `{"type":"result","key":"r","value":{"value":1.5},"headers":{"operation":"insert"}}`), http.StatusNoContent)
	requireError(t, h.writeEvents("/calc/c1", tok, `{"type":"zzz","key":"r","value":{},"headers":{"operation":"insert"}}`),
		http.StatusUnprocessableEntity, "UNKNOWN_EVENT_TYPE", `Unknown event type "zzz" (event 0): the entity type's state_schemas do not declare it`)
}

// TestStateSchemasElectricRuntimeRegistration: a type registered as Electric's runtime
// registers it — DEFAULT_STATE_SCHEMAS (testdata/electric_default_state_schemas.json,
// generated from agents-runtime's default-state-schemas.ts with the zod and
// zod-to-json-schema versions it pins: every built-in event type maps to {}) merged with
// a custom state collection — accepts what the runtime writes and checks the collection.
func TestStateSchemasElectricRuntimeRegistration(t *testing.T) {
	h := setup(t)
	defaults, err := os.ReadFile("testdata/electric_default_state_schemas.json")
	require.NoError(t, err)
	schemas := strings.TrimSuffix(strings.TrimSpace(string(defaults)), "}") +
		`,"state:notes":{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}}`
	h.registerType(`{"name":"horton","description":"horton entity","state_schemas":` + schemas + `}`)
	tok := h.spawnToken("horton", "h1")
	for _, ev := range []string{
		`{"type":"run","key":"run-0","value":{"status":"started"},"headers":{"operation":"insert"}}`,
		`{"type":"step","key":"step-0","value":{"run_id":"run-0","step_number":0,"status":"started"},"headers":{"operation":"insert"}}`,
		`{"type":"text","key":"text-0","value":{"run_id":"run-0","status":"streaming"},"headers":{"operation":"insert"}}`,
		`{"type":"text_delta","key":"text-0:0","value":{"text_id":"text-0","run_id":"run-0","delta":"Hello"},"headers":{"operation":"insert"}}`,
		`{"type":"tool_call","key":"tc-0","value":{"tool_name":"bash","status":"started","args":{}},"headers":{"operation":"insert"}}`,
		`{"type":"reasoning_delta","key":"r-0:0","value":{"delta":"hm"},"headers":{"operation":"insert"}}`,
		`{"type":"context_inserted","key":"c-0","value":{"id":"c-0"},"headers":{"operation":"insert"}}`,
		`{"type":"replay_watermark","key":"w","value":{"offset":"0"},"headers":{"operation":"upsert"}}`,
		`{"type":"state:notes","key":"n1","value":{"title":"groceries"},"headers":{"operation":"insert"}}`,
		`{"type":"run","key":"run-0","value":{"status":"completed","finish_reason":"stop"},"headers":{"operation":"update"}}`,
	} {
		requireStatus(t, h.writeEvents("/horton/h1", tok, ev), http.StatusNoContent)
	}
	requireError(t, h.writeEvents("/horton/h1", tok, `{"type":"state:notes","key":"n2","value":{"title":7},"headers":{"operation":"insert"}}`),
		http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED", `Event 0 (type "state:notes") does not match its state schema`)
	requireError(t, h.writeEvents("/horton/h1", tok, `{"type":"state:todos","key":"x","value":{},"headers":{"operation":"insert"}}`),
		http.StatusUnprocessableEntity, "UNKNOWN_EVENT_TYPE", `Unknown event type "state:todos" (event 0): the entity type's state_schemas do not declare it`)
}
