package wake

import (
	"sync"
	"time"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/wire"
)

// markProcessed makes a successful run of a queued (status "pending") inbox message
// also mark it processed, as Electric's runtime does when it takes a queued message:
// an inbox update {status:"processed", processed_at}, ahead of the run's
// own events and in their transaction. Electric's UI shows pending messages in the
// queue under the conversation; without the mark a handled message stayed there, below
// its own reply. Other wakes and messages already processed are left as they are.
func markProcessed(eff Effects, w wire.Wake) Effects {
	msg, ok := w.(wire.InboxWake)
	if !ok || eff == nil || statusOf(msg.Value) != "pending" {
		return eff
	}
	now := time.Now()
	var v rawjson.Object
	v.String("status", "processed").Time("processed_at", now)
	mark := wire.Event{Type: wire.InboxEventType, Key: msg.Key, Value: v.Bytes(), Operation: wire.OpUpdate,
		Timestamp: now}.Marshal()
	return &markedEffects{Effects: eff, mark: mark}
}

// markedEffects are a run's effects with the processed mark first.
type markedEffects struct {
	Effects
	mark   []byte
	once   sync.Once
	events [][]byte
}

func (m *markedEffects) Events() [][]byte {
	m.once.Do(func() { m.events = append([][]byte{m.mark}, m.Effects.Events()...) })
	return m.events
}
