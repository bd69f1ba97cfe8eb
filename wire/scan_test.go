package wire

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// window builds stream messages numbered from first, the way the worker reads them.
func window(first int64, events ...string) []Message {
	out := make([]Message, len(events))
	for i, ev := range events {
		out[i] = Message{Data: []byte(ev), Seq: first + int64(i)}
	}
	return out
}

func ev(typ, key, op, value string) string {
	s := `{"type":"` + typ + `","key":"` + key + `"`
	if value != "" {
		s += `,"value":` + value
	}
	return s + `,"headers":{"operation":"` + op + `"}}`
}

func inboxInsert(key, value string) string { return ev("inbox", key, "insert", value) }

func inboxUpdate(key, value string) string { return ev("inbox", key, "update", value) }

// wakes lists the wakes of items, and seqs their sequence numbers.
func wakes(items []ScannedWake) (out []Wake, seqs []int64) {
	for _, it := range items {
		out = append(out, it.Wake)
		seqs = append(seqs, it.Seq)
	}
	return out, seqs
}

func TestScanInboxMessages(t *testing.T) {
	ts := "2026-01-02T03:04:05.678Z"
	msgs := window(5,
		inboxInsert("m1", `{"from":"/principal/user%3Aann","payload":{"b":1, "a":[2]},"timestamp":"`+ts+`","mode":"immediate","status":"processed","message_type":"composer_input"}`),
		inboxInsert("m2", `{"from":"/principal/user%3Aann","from_agent":"/agent/x","payload":"hi","mode":"queued","status":"pending","position":"0001:a0"}`),
		inboxInsert("m3", `{"from":"/p","payload":null,"mode":"steer"}`),
	)
	sc := NewScanner(nil, nil)
	items, trailing := sc.Scan(msgs)
	require.Empty(t, trailing)
	require.Len(t, items, 3)
	stamp, err := time.Parse(time.RFC3339Nano, ts)
	require.NoError(t, err)

	w1 := items[0].Wake.(InboxWake)
	require.Equal(t, InboxWake{Key: "m1", Type: "composer_input", Payload: json.RawMessage(`{"b":1, "a":[2]}`),
		From: "/principal/user%3Aann", Mode: "immediate", Timestamp: stamp,
		Value: w1.Value}, w1)
	require.JSONEq(t, `{"from":"/principal/user%3Aann","payload":{"b":1, "a":[2]},"timestamp":"`+ts+`","mode":"immediate","status":"processed","message_type":"composer_input"}`,
		string(w1.Value))
	require.Equal(t, int64(5), items[0].Seq)
	require.Equal(t, "m1", items[0].Key)

	w2 := items[1].Wake.(InboxWake)
	require.Equal(t, "m2", w2.Key)
	require.Equal(t, "", w2.Type)
	require.Equal(t, `"hi"`, string(w2.Payload))
	require.Equal(t, "/agent/x", w2.FromAgent)
	require.Equal(t, "queued", w2.Mode)
	require.Equal(t, "0001:a0", w2.Position)
	require.Empty(t, w2.Offset, "byte offsets are stamped by the reader, who knows them")

	w3 := items[2].Wake.(InboxWake)
	require.Equal(t, "steer", w3.Mode)
	require.Equal(t, "null", string(w3.Payload))
	require.Equal(t, int64(7), items[2].Seq)
}

func TestScanPausedMessageHeldUntilReleased(t *testing.T) {
	sc := NewScanner(nil, nil)
	paused := `{"from":"/p","payload":{"v":1},"mode":"paused","status":"pending","position":"0001:a0"}`
	items, trailing := sc.Scan(window(2, inboxInsert("p", paused), ev("text", "t1", "insert", `{"text":"x"}`)))
	require.Empty(t, items, "a paused message is held")
	require.Equal(t, []HeldOp{{Key: "p", Seq: 2, Value: json.RawMessage(paused)}}, trailing)
	require.Contains(t, sc.Held(), "p")

	// an update that keeps it paused edits the held message
	items, trailing = sc.Scan(window(4, inboxUpdate("p", `{"payload":{"v":2}}`)))
	require.Empty(t, items)
	require.Len(t, trailing, 1)
	require.False(t, trailing[0].Del)
	require.Equal(t, int64(2), trailing[0].Seq, "the held message keeps its own seq")
	require.JSONEq(t, `{"from":"/p","payload":{"v":2},"mode":"paused","status":"pending","position":"0001:a0"}`, string(trailing[0].Value))

	// updates of other messages (delivered ones) are not work
	items, _ = sc.Scan(window(5, inboxUpdate("other", `{"mode":"queued"}`)))
	require.Empty(t, items)

	// a held message survives a reload (newScanner from inbox_held), then is released
	sc = NewScanner(map[string]HeldMessage{"p": {Seq: 2, Value: trailing[0].Value}}, nil)
	msgs := window(6, inboxUpdate("p", `{"mode":"queued","status":"pending"}`), inboxInsert("q", `{"payload":1,"mode":"immediate"}`))
	items, trailing = sc.Scan(msgs)
	require.Empty(t, trailing)
	require.Len(t, items, 2)
	w := items[0].Wake.(InboxWake)
	require.Equal(t, "p", w.Key)
	require.Equal(t, "queued", w.Mode)
	require.JSONEq(t, `{"v":2}`, string(w.Payload), "delivered with the merged value")
	require.Equal(t, `{"from":"/p","payload":{"v":2},"mode":"queued","status":"pending","position":"0001:a0"}`, string(w.Value),
		"merged shallowly, in the original member order")
	require.Equal(t, "/p", w.From)
	require.Equal(t, "0001:a0", w.Position)
	require.Equal(t, int64(6), items[0].Seq)
	require.Equal(t, []HeldOp{{Del: true, Key: "p"}}, items[0].Held, "the release removes the held row with the delivery")
	require.Empty(t, sc.Held())
	require.Equal(t, "q", items[1].Wake.(InboxWake).Key)
}

func TestScanHeldMessageDroppedWhenCancelledOrDeleted(t *testing.T) {
	sc := NewScanner(nil, nil)
	items, trailing := sc.Scan(window(1,
		inboxInsert("c", `{"payload":1,"mode":"paused"}`),
		inboxInsert("d", `{"payload":2,"mode":"paused"}`),
		inboxInsert("x", `{"payload":3,"mode":"immediate"}`),
	))
	require.Len(t, items, 1)
	require.Len(t, items[0].Held, 2, "the held inserts are persisted with the next delivery")
	require.Empty(t, trailing)
	items, trailing = sc.Scan(window(4,
		inboxUpdate("c", `{"status":"cancelled"}`),
		ev("inbox", "d", "delete", ""),
		inboxUpdate("c", `{"mode":"queued"}`), // too late: it is gone
	))
	require.Empty(t, items)
	require.Equal(t, []HeldOp{{Del: true, Key: "c"}, {Del: true, Key: "d"}}, trailing)
	require.Empty(t, sc.Held())
}

func TestScanMessageWithdrawnInTheSameWindow(t *testing.T) {
	sc := NewScanner(nil, nil)
	items, _ := sc.Scan(window(1,
		inboxInsert("q1", `{"payload":1,"mode":"queued","status":"pending"}`),
		inboxInsert("q2", `{"payload":2,"mode":"queued","status":"pending"}`),
		inboxInsert("q3", `{"payload":3,"mode":"queued","status":"pending"}`),
		inboxUpdate("q1", `{"status":"cancelled"}`),
		ev("inbox", "q3", "delete", ""),
	))
	ws, _ := wakes(items)
	require.Len(t, ws, 1)
	require.Equal(t, "q2", ws[0].(InboxWake).Key, "cancelled and deleted messages are not delivered")

	// a cancellation in a later window comes too late: the message was work already
	items, _ = sc.Scan(window(6, inboxInsert("q4", `{"payload":4,"mode":"queued"}`)))
	require.Len(t, items, 1)
	items, _ = sc.Scan(window(7, inboxUpdate("q4", `{"status":"cancelled"}`)))
	require.Empty(t, items)
}

func TestScanOtherWakes(t *testing.T) {
	sc := NewScanner(nil, nil)
	msgs := window(1,
		ev("entity_created", "entity-created", "insert", `{"entity_type":"t","args":{"k":[1, 2]},"parent_url":"/p/1"}`),
		ev("entity_created", "entity-created", "insert", `{"entity_type":"t"}`),
		ev("signal", "signal-SIGINT-1", "insert", `{"signal":"SIGINT","reason":"why","payload":{"x":1}}`),
		ev("signal", "signal-SIGKILL-1", "insert", `{"signal":"SIGKILL"}`),
		ev("signal", "signal-SIGTERM-1", "insert", `{"signal":"SIGTERM"}`),
		ev("wake", "timer-1", "insert", `{"kind":"schedule","id":"t1","payload":{"n":7},"due_at":"2026-01-02T03:04:05Z"}`),
		ev("wake", "obs-1", "insert", `{"kind":"observation","source":"/s/1","event":{"type":"text","key":"k","operation":"insert","value":{"text":"hi"}}}`),
		ev("wake", "obs-2", "insert", `{"kind":"observation","source":"/s/1","lifecycle":"killed"}`),
		ev("wake", "w-x", "insert", `{"kind":"mystery"}`),
		ev("text", "t", "insert", `{"text":"not work"}`),
		ev("slash_command", "help", "insert", `{"name":"help"}`),
		ev("error", "e", "insert", `{"message":"m"}`),
		ev("entity_stopped", "entity-stopped", "insert", `{"status":"stopped"}`),
		ev("signal", "signal-SIGINT-2", "update", `{"signal":"SIGINT"}`),
		`{"headers":{"control":"snapshot-start"}}`,
		`not json`,
	)
	items, trailing := sc.Scan(msgs)
	require.Empty(t, trailing)
	ws, seqs := wakes(items)
	due, _ := time.Parse(time.RFC3339, "2026-01-02T03:04:05Z")
	require.Equal(t, []Wake{
		SpawnWake{Args: json.RawMessage(`{"k":[1, 2]}`), Parent: "/p/1"},
		SpawnWake{Args: json.RawMessage(`{}`)},
		SignalWake{Signal: "SIGINT", Reason: "why", Payload: json.RawMessage(`{"x":1}`)},
		SignalWake{Signal: "SIGTERM"},
		ScheduleWake{ID: "t1", Payload: json.RawMessage(`{"n":7}`), DueAt: due},
		ObservationWake{Source: "/s/1", Event: &ObservedEvent{Type: "text", Key: "k", Operation: "insert", Value: json.RawMessage(`{"text":"hi"}`)}},
		ObservationWake{Source: "/s/1", Lifecycle: "killed"},
	}, ws)
	require.Equal(t, []int64{1, 2, 3, 5, 6, 7, 8}, seqs, "in stream order; SIGKILL and non-work events skipped")
	for _, w := range ws {
		require.NotEmpty(t, w.Kind())
	}
}

func TestScanSkipsConsumedSteerMessages(t *testing.T) {
	sc := NewScanner(nil, []int64{2})
	items, _ := sc.Scan(window(1,
		inboxInsert("a", `{"payload":1,"mode":"immediate"}`),
		inboxInsert("s", `{"payload":2,"mode":"steer"}`),
		inboxInsert("b", `{"payload":3,"mode":"steer"}`),
	))
	ws, seqs := wakes(items)
	require.Len(t, ws, 2)
	require.Equal(t, []int64{1, 3}, seqs, "the steer message a running handler received is skipped")
}
