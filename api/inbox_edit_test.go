package api_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInboxPatchAndDelete: PATCH writes an inbox update carrying only the fields given
// (payload byte for byte), DELETE an inbox delete; both answer {txid} matching the event;
// unknown or deleted keys are 404, an empty or ill-typed patch 400, an ended entity 409.
func TestInboxPatchAndDelete(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "e", nil)
	const path = entitiesPath + "/chat/e/inbox/"
	h.mustSend("/chat/e", `{"key":"q1","mode":"queued","payload":{"text":"draft"}}`)
	weird := `a"b\c é` // a key JSON escapes, found without the byte prefilter
	h.mustSend("/chat/e", map[string]any{"key": weird, "mode": "paused", "payload": 1})
	// a payload jsonb could not hold must not break the lookup
	h.mustSend("/chat/e", `{"key":"nul","payload":"a\u0000b"}`)

	// A key with characters encodeURIComponent escapes is found from its encoded form.
	h.mustSend("/chat/e", `{"key":"msg:1/x","mode":"queued","payload":1}`)
	requireStatus(t, h.do(http.MethodPatch, path+"msg%3A1%2Fx", `{"status":"cancelled"}`), http.StatusOK)

	r := h.do(http.MethodPatch, path+"q1", `{"payload": {"text" : "edited"}, "position": "0000000000000001:a1"}`)
	requireStatus(t, r, http.StatusOK)
	txid := str(t, r.object(t)["txid"])
	events := h.events("/chat/e")
	ev := events[len(events)-1]
	require.Equal(t, "inbox", ev.Type)
	require.Equal(t, "q1", ev.Key)
	require.Equal(t, "update", ev.Headers["operation"])
	require.Equal(t, txid, ev.Headers["txid"])
	require.ElementsMatch(t, []string{"payload", "position"}, keys(ev.Value), "only the fields given")
	require.Equal(t, `{"text" : "edited"}`, string(ev.Value["payload"]), "payload byte for byte")

	r = h.do(http.MethodPatch, path+url.PathEscape(weird), `{"status":"processed"}`)
	requireStatus(t, r, http.StatusOK)
	events = h.events("/chat/e")
	ev = events[len(events)-1]
	require.Equal(t, weird, ev.Key)
	require.ElementsMatch(t, []string{"status", "processed_at"}, keys(ev.Value))

	requireError(t, h.do(http.MethodPatch, path+"nope", `{"mode":"immediate"}`), http.StatusNotFound, "NOT_FOUND", "Inbox message not found")
	requireError(t, h.do(http.MethodPatch, path+"q1", `{}`), http.StatusBadRequest, "INVALID_REQUEST",
		"Empty patch: give at least one of payload, position, mode, status")
	requireSchemaMismatch(t, h.do(http.MethodPatch, path+"q1", `{"mode":"later","status":"done","position":1}`),
		detail{"/position", "must be string"},
		detail{"/mode", "must be equal to one of the allowed values"},
		detail{"/status", "must be equal to one of the allowed values"})
	requireError(t, h.do(http.MethodPatch, entitiesPath+"/chat/nobody/inbox/q1", `{"mode":"queued"}`),
		http.StatusNotFound, "NOT_FOUND", "Entity not found at /chat/nobody")

	r = h.do(http.MethodDelete, path+"q1", nil)
	requireStatus(t, r, http.StatusOK)
	events = h.events("/chat/e")
	ev = events[len(events)-1]
	require.Equal(t, "delete", ev.Headers["operation"])
	require.Equal(t, str(t, r.object(t)["txid"]), ev.Headers["txid"])
	require.Nil(t, ev.Value, "a delete carries no value")
	requireError(t, h.do(http.MethodDelete, path+"q1", nil), http.StatusNotFound, "NOT_FOUND", "Inbox message not found")
	requireError(t, h.do(http.MethodPatch, path+"q1", `{"mode":"queued"}`), http.StatusNotFound, "NOT_FOUND", "Inbox message not found")

	before := len(h.events("/chat/e"))
	requireStatus(t, h.signal("/chat/e", `{"signal":"SIGKILL"}`), http.StatusOK)
	requireError(t, h.do(http.MethodPatch, path+url.PathEscape(weird), `{"mode":"immediate"}`),
		http.StatusConflict, "NOT_RUNNING", "Entity is not accepting writes")
	require.Len(t, h.events("/chat/e"), before+1, "only the kill's signal event was added")
}
