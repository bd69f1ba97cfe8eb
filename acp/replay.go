package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/entityd/entityd/wire/composer"
)

// The bounds of a replayed history (session/load): the newest maxReplayMessages
// messages, user messages and replies counted alike, holding at most maxReplayBytes of
// text. Older messages are left out (a first notice says how many); a single message
// longer than maxReplayBytes is cut. They bound what the adapter holds and what the
// editor is sent, whatever the entity's age; the stream itself is read page by page.
const (
	maxReplayMessages = 200
	maxReplayBytes    = 1 << 20
)

// replayed is one message of a replayed history: a user message, or a reply (every bit
// of reply text between two user messages, in stream order).
type replayed struct {
	user bool
	text []byte
	cut  bool // longer than maxReplayBytes: the rest was dropped
}

// history is the newest part of an entity's conversation, within the replay bounds.
type history struct {
	msgs    []*replayed // oldest first
	bytes   int         // of msgs' text
	omitted int         // older messages left out
}

// add takes one event of the entity's main stream, in stream order: an inbox message
// starts a user message; reply text, and the notice of a run given up on (as a live
// prompt shows it), extend the reply in progress. Everything else (runs, statuses,
// signals, the handler's state) is not part of the conversation.
func (h *history) add(e event) {
	switch e.Type {
	case "inbox":
		if text, ok := userText(e); ok {
			h.push(&replayed{user: true}, text)
		}
	case "text", "text_delta":
		if text := replyText(e); text != "" {
			h.reply(text, "")
		}
	case "error":
		if _, why, ok := gaveUp(e); ok {
			h.reply(couldNotHandle(why), "\n\n")
		}
	}
}

// reply appends text to the reply in progress (after sep when it has text already), or
// starts one.
func (h *history) reply(text, sep string) {
	if n := len(h.msgs); n > 0 && !h.msgs[n-1].user {
		m := h.msgs[n-1]
		if len(m.text) > 0 {
			text = sep + text
		}
		h.appendText(m, text)
		return
	}
	h.push(&replayed{}, text)
}

func (h *history) push(m *replayed, text string) {
	h.msgs = append(h.msgs, m)
	h.appendText(m, text)
}

// appendText adds text to m (the newest message), then drops the oldest messages while
// the history is over its bounds; the newest always stays, cut to maxReplayBytes.
func (h *history) appendText(m *replayed, text string) {
	if m.cut {
		return
	}
	if room := maxReplayBytes - len(m.text); len(text) > room {
		text = truncateUTF8(text, room)
		m.cut = true
	}
	m.text = append(m.text, text...)
	h.bytes += len(text)
	for len(h.msgs) > 1 && (len(h.msgs) > maxReplayMessages || h.bytes > maxReplayBytes) {
		h.bytes -= len(h.msgs[0].text)
		h.msgs[0] = nil // let the dropped text go with the next reallocation
		h.msgs = h.msgs[1:]
		h.omitted++
	}
}

// truncateUTF8 is s cut to at most n bytes, on a character boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// userText is the text of an inbox message as the editor shows it: a composer_input's
// source (what the user typed, slash commands and all), a payload that is a string, a
// payload's string "text" member (a common shape of typed messages), or else the
// payload's JSON. Updates and deletes of queued messages are not followed: the message
// is shown as it was sent.
func userText(e event) (string, bool) {
	if e.Headers.Operation != "insert" {
		return "", false
	}
	var v struct {
		MessageType string          `json:"message_type"`
		Payload     json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(e.Value, &v) != nil || len(v.Payload) == 0 {
		return "", false
	}
	var s string
	if json.Unmarshal(v.Payload, &s) == nil {
		return s, s != ""
	}
	var p struct {
		Source *string `json:"source"`
		Text   *string `json:"text"`
	}
	_ = json.Unmarshal(v.Payload, &p) // a payload that is no object has neither
	switch {
	case v.MessageType == composer.InputType && p.Source != nil:
		return *p.Source, *p.Source != ""
	case p.Text != nil:
		return *p.Text, *p.Text != ""
	}
	var compact bytes.Buffer
	if json.Compact(&compact, v.Payload) != nil {
		return "", false
	}
	return compact.String(), true
}

// readHistory reads the entity's main stream from its start, one catch-up page at a
// time (the server bounds a page: 1 MiB by default), into the bounded history; only one
// page is held at a time.
func readHistory(ctx context.Context, api *entityAPI) (*history, error) {
	h := &history{}
	offset := "-1"
	for {
		b, err := api.readStream(ctx, "/main", offset, "", false)
		if err != nil {
			return nil, err
		}
		for _, e := range b.events {
			h.add(e)
		}
		if b.upToDate || len(b.events) == 0 || b.next == offset {
			return h, nil
		}
		offset = b.next
	}
}

// replay sends the history to the session as session/update notifications, oldest
// first: a user_message_chunk per user message and an agent_message_chunk per reply,
// after a notice of the messages left out, if any.
func (a *agent) replay(ctx context.Context, s *session, h *history) error {
	send := func(u sdk.SessionUpdate) error {
		return a.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: s.id, Update: u})
	}
	if h.omitted > 0 {
		notice := fmt.Sprintf("entityd: %d earlier messages of %s are not shown (a loaded session replays the newest %d, at most %d KiB of text).",
			h.omitted, s.api.url(), maxReplayMessages, maxReplayBytes>>10)
		if err := send(sdk.UpdateAgentMessageText(notice)); err != nil {
			return err
		}
	}
	for _, m := range h.msgs {
		text := string(m.text)
		if m.cut {
			text += fmt.Sprintf("\n\n[entityd: cut at %d KiB]", maxReplayBytes>>10)
		}
		u := sdk.UpdateAgentMessageText(text)
		if m.user {
			u = sdk.UpdateUserMessageText(text)
		}
		if err := send(u); err != nil {
			return err
		}
	}
	return nil
}
