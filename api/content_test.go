package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Content (payloads, composer text, spawn args, signal payloads, JSON stream bodies) may
// hold any JSON escape — \u0000, a lone surrogate, controls — and is stored and served
// back byte for byte, wherever it flows: sends, delayed sends, inbox edits, spawn args,
// signals, and plain JSON streams. Only identifiers are held to the text policy.
func TestContentIsKeptByteForByte(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	const odd = `"nul \u0000 lone \ud800 low \udfff bell \u0007 pair \ud83d\ude00 \/ \\"`
	composer := `{"source":` + odd + `,"nodes":[]}`

	spawned := h.mustSpawn("chat", "c", `{"args":{"text":`+odd+`}}`)
	require.Contains(t, string(spawned["spawn_args"]), odd)
	h.mustSend("/chat/c", `{"type":"composer_input","key":"now","payload":`+composer+`}`)
	h.mustSend("/chat/c", `{"type":"composer_input","key":"held","mode":"paused","payload":`+composer+`}`)
	r := h.send("/chat/c", `{"type":"composer_input","key":"later","afterMs":1,"payload":`+composer+`}`)
	requireStatus(t, r, http.StatusNoContent)
	r = h.do(http.MethodPatch, "/_electric/entities/chat/c/inbox/held", `{"payload":{"edited":`+odd+`}}`)
	requireStatus(t, r, http.StatusOK)
	r = h.signal("/chat/c", `{"signal":"SIGUSR","payload":{"why":`+odd+`}}`)
	requireStatus(t, r, http.StatusOK)

	h.waitNoPendingDelayed("/chat/c") // "later" has fired (the held message's edit is an inbox event too)
	inbox := ofType(h.events("/chat/c"), "inbox")
	byKey := map[string]event{}
	for _, ev := range inbox {
		byKey[ev.Key] = ev
	}
	require.Equal(t, composer, string(byKey["now"].Value["payload"]))
	require.Equal(t, composer, string(byKey["later"].Value["payload"]), "through delayed_sends (json) intact")
	events := h.events("/chat/c")
	var edited, signalled, created bool
	for _, ev := range events {
		switch {
		case ev.Type == "inbox" && ev.Key == "held" && ev.Headers["operation"] == "update":
			require.Equal(t, `{"edited":`+odd+`}`, string(ev.Value["payload"]))
			edited = true
		case ev.Type == "signal":
			require.Equal(t, `{"why":`+odd+`}`, string(ev.Value["payload"]))
			signalled = true
		case ev.Type == "entity_created":
			require.Equal(t, `{"text":`+odd+`}`, string(ev.Value["args"]))
			created = true
		}
	}
	require.True(t, edited && signalled && created, "events: %v", types(events))
	require.Contains(t, string(h.getEntity("/chat/c")["spawn_args"]), odd)

	// A plain JSON stream: the body is split into messages, each kept as sent.
	requireStatus(t, h.do(http.MethodPut, "/v1/stream/odd", `[`+odd+`]`), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPost, "/v1/stream/odd", `{"k":`+odd+`}`), http.StatusNoContent)
	r = h.do(http.MethodGet, "/v1/stream/odd?offset=-1", nil)
	requireStatus(t, r, http.StatusOK)
	require.Equal(t, `[`+odd+`,{"k":`+odd+`}]`, string(r.Body))
}
