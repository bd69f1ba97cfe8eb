package acp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// ev is a stream event as the server serves it.
func ev(typ, op, value string) event {
	e := event{Type: typ, Value: json.RawMessage(value)}
	e.Headers.Operation = op
	return e
}

func inboxEv(payload string) event {
	return ev("inbox", "insert", `{"message_type":"composer_input","payload":`+payload+`}`)
}

func deltaEv(text string) event {
	b, _ := json.Marshal(text)
	return ev("text_delta", "insert", `{"delta":`+string(b)+`}`)
}

func (h *history) lines() []string {
	var out []string
	for _, m := range h.msgs {
		role := "agent"
		if m.user {
			role = "user"
		}
		out = append(out, role+": "+string(m.text))
	}
	return out
}

// A conversation: a message's reply is every bit of reply text up to the next message,
// in stream order; what is not conversation is left out; a run given up on reads as the
// live prompt showed it.
func TestHistoryConversation(t *testing.T) {
	var h history
	for _, e := range []event{
		ev("entity_created", "insert", `{}`),
		inboxEv(`{"source":"/pr-review 7","nodes":[]}`),
		ev("run", "insert", `{"status":"started"}`),
		ev("text", "insert", `{"status":"streaming"}`),
		deltaEv("Reviewing "),
		deltaEv("#7."),
		ev("text", "update", `{"status":"completed","text":"not again"}`),
		ev("inbox", "update", `{"status":"processed"}`),
		ev("inbox", "insert", `{"message_type":"note","payload":{"text":"buy milk"}}`),
		ev("text", "insert", `{"text":"noted"}`), // as older handlers wrote a reply
		ev("error", "insert", `{"key":"k","will_retry":false,"message":"disk full"}`),
		ev("inbox", "insert", `{"payload":"a bare string"}`),
		ev("error", "insert", `{"key":"k2","will_retry":true,"message":"retrying"}`),
		ev("error", "insert", `{"key":"k2","will_retry":false,"message":"gave up"}`),
		ev("inbox", "insert", `{"payload":{"n": 1}}`),
		ev("inbox", "insert", `{"message_type":"composer_input","payload":{"source":""}}`),
	} {
		h.add(e)
	}
	require.Equal(t, []string{
		"user: /pr-review 7",
		"agent: Reviewing #7.",
		"user: buy milk",
		"agent: noted\n\nentityd: the entity could not handle this message (disk full).",
		"user: a bare string",
		"agent: entityd: the entity could not handle this message (gave up).",
		`user: {"n":1}`,
	}, h.lines())
	require.Zero(t, h.omitted)
}

// The newest maxReplayMessages messages are kept, the older counted.
func TestHistoryKeepsTheNewestMessages(t *testing.T) {
	var h history
	for i := range maxReplayMessages + 50 {
		h.add(inboxEv(fmt.Sprintf(`{"source":"m%d"}`, i)))
	}
	require.Len(t, h.msgs, maxReplayMessages)
	require.Equal(t, 50, h.omitted)
	require.Equal(t, "m50", string(h.msgs[0].text))
	require.Equal(t, fmt.Sprintf("m%d", maxReplayMessages+49), string(h.msgs[maxReplayMessages-1].text))
}

// At most maxReplayBytes of text are kept: older messages go first, and a single
// message longer than that is cut on a character boundary.
func TestHistoryKeepsTheNewestBytes(t *testing.T) {
	var h history
	big := strings.Repeat("x", 300<<10)
	for range 5 {
		h.add(inboxEv(`{"source":"` + big + `"}`))
	}
	require.Len(t, h.msgs, 3, "three of 300 KiB fit in 1 MiB, a fourth does not")
	require.Equal(t, 2, h.omitted)
	require.Equal(t, 3*len(big), h.bytes)

	// One reply of 1 MiB and a bit, in deltas that end inside a 4-byte character.
	for range 4 {
		h.add(deltaEv(big))
	}
	h.add(deltaEv(strings.Repeat("😀", 100<<10)))
	require.Len(t, h.msgs, 1)
	m := h.msgs[0]
	require.False(t, m.user)
	require.True(t, m.cut)
	require.LessOrEqual(t, len(m.text), maxReplayBytes)
	require.Greater(t, len(m.text), maxReplayBytes-4)
	require.True(t, utf8.Valid(m.text))
	require.Equal(t, len(m.text), h.bytes)
	require.Equal(t, 5, h.omitted)
	h.add(deltaEv("more"))
	require.Equal(t, len(m.text), h.bytes, "a cut reply takes no more")
}
