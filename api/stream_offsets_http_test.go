package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every State Protocol event served from a JSON stream carries headers.offset: the
// offset after it (what Electric's runtime and StreamDB read), in catch-up, long-poll
// and SSE reads alike; the stored bytes and other values are served as they are.
func TestServedEventsCarryTheirOffset(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"echo","description":"offsets"}`)
	h.mustSpawn("echo", "a", nil)
	h.mustSend("/echo/a", map[string]any{"payload": "one"})
	h.mustSend("/echo/a", map[string]any{"payload": "two"})

	read := h.readStream("/echo/a")
	evs := read.Events
	require.GreaterOrEqual(t, len(evs), 3)
	prev := ""
	for i, ev := range evs {
		off := ev.Headers["offset"]
		require.Regexp(t, offsetRe, off, "event %d: %s", i, ev.Raw)
		require.Greater(t, off, prev, "offsets grow")
		prev = off
		// the offset is the one after the event: a read from it starts with the next one
		next := h.do(http.MethodGet, "/echo/a/main?offset="+off, nil)
		requireStatus(t, next, http.StatusOK)
		rest := parseEvents(t, next.Body)
		if i+1 < len(evs) {
			require.NotEmpty(t, rest)
			require.Equal(t, evs[i+1].Key, rest[0].Key)
		} else {
			require.Empty(t, rest)
		}
	}
	require.Equal(t, read.Last.Header.Get("Stream-Next-Offset"), prev, "the last event's offset is the tail")

	// long-poll: the new event carries the offset the response moves to
	tail := prev
	done := make(chan *response, 1)
	go func() { done <- h.do(http.MethodGet, "/echo/a/main?offset="+tail+"&live=long-poll", nil) }()
	h.mustSend("/echo/a", map[string]any{"payload": "three"})
	lp := <-done
	requireStatus(t, lp, http.StatusOK)
	lpEvents := parseEvents(t, lp.Body)
	require.Len(t, lpEvents, 1)
	require.Equal(t, lp.Header.Get("Stream-Next-Offset"), lpEvents[0].Headers["offset"])

	// SSE: the same stamps
	sse := openSSE(t, h.srv.URL+"/echo/a/main?offset=-1&live=sse")
	typ, data, err := sse.next()
	require.NoError(t, err)
	require.Equal(t, "data", typ)
	sseEvents := parseEvents(t, []byte(data))
	require.Len(t, sseEvents, len(evs)+1)
	for i := range evs {
		require.Equal(t, evs[i].Headers["offset"], sseEvents[i].Headers["offset"])
	}
	require.Equal(t, lpEvents[0].Headers["offset"], sseEvents[len(evs)].Headers["offset"])
}

// A plain JSON stream's values that are not State Protocol events are served byte for
// byte; one that is gets the stamp and keeps the rest of its bytes.
func TestOffsetStampLeavesOtherValuesExact(t *testing.T) {
	h := setup(t)
	r := h.do(http.MethodPut, "/v1/stream/plain", nil, "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, r.Status)
	values := []string{
		`{ "a" : 1 }`,
		`{"headers":{"Content-Type":"text/plain"},"x":"\u00e9"}`,
		`{"type":"t","headers":{ "operation" : "insert" }}`,
	}
	for _, v := range values {
		r := h.do(http.MethodPost, "/v1/stream/plain", v, "Content-Type", "application/json")
		require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	}
	r = h.do(http.MethodGet, "/v1/stream/plain?offset=-1", nil)
	requireStatus(t, r, http.StatusOK)
	var got []json.RawMessage
	require.NoError(t, json.Unmarshal(r.Body, &got))
	require.Len(t, got, 3)
	require.Equal(t, values[0], string(got[0]))
	require.Equal(t, values[1], string(got[1]))
	require.Equal(t, `{"type":"t","headers":{ "operation" : "insert" ,"offset":"`+r.Header.Get("Stream-Next-Offset")+`"}}`, string(got[2]))
}
