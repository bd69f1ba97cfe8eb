package runtime_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/wake"
)

// TestQueuedMessageIsMarkedProcessed: a queued message (stored "pending", as Electric's
// UI sends by default) is marked processed when its run succeeds, ahead of the run's own
// events and in their commit, as Electric's runtime does; an immediate one is not
// touched (it was stored processed).
func TestQueuedMessageIsMarkedProcessed(t *testing.T) {
	def := runtime.EntityDefinition{Type: "queued", Handler: func(ctx *runtime.Context) error {
		if _, ok := ctx.Wake.(runtime.InboxWake); ok {
			return ctx.WriteText("seen")
		}
		return nil
	}}
	e := startServer(t, wake.Options{}, true, def)
	a := e.spawn("queued", "a", nil)
	e.send(a, map[string]any{"key": "q1", "payload": map[string]any{"text": "hi"}, "mode": "queued"})
	e.send(a, map[string]any{"key": "i1", "payload": "now"})
	var events []event
	testwait.Until(t, "both replies", func() bool {
		events = e.events(a)
		return len(texts(t, events)) == 2
	}, 10*time.Second)

	updates := func(key string) []event {
		var out []event
		for _, ev := range events {
			if ev.Type == "inbox" && ev.Key == key && ev.op() == "update" {
				out = append(out, ev)
			}
		}
		return out
	}
	marks := updates("q1")
	require.Len(t, marks, 1, "the queued message is marked once")
	var v struct {
		Status      string `json:"status"`
		ProcessedAt string `json:"processed_at"`
	}
	require.NoError(t, json.Unmarshal(marks[0].Value, &v))
	require.Equal(t, "processed", v.Status)
	require.NotEmpty(t, v.ProcessedAt)
	require.Empty(t, updates("i1"), "an immediate message was stored processed")

	// the mark comes right before its run starts
	i := slices.IndexFunc(events, func(ev event) bool { return ev.Type == "inbox" && ev.Key == "q1" && ev.op() == "update" })
	require.Equal(t, "run", events[i+1].Type)
	require.Equal(t, "insert", events[i+1].op())
}
