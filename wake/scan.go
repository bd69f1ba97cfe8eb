package wake

import (
	"encoding/json"

	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// item is one unit of work found in an entity's stream, at its offset.
type item struct {
	seq    int64
	offset streamdb.Offset
	wake   wire.Wake
	key    string // names the work in error events and failure records
	// held are the changes to the held (paused) messages that the events up to and
	// including this one made; they are persisted with this item's acknowledgement.
	held []wire.HeldOp
}

// scan finds the work in msgs with the rules every handler gets (wire.Scanner), and
// places each item at its offset: an inbox wake carries the offset right after it.
func scan(sc *wire.Scanner, msgs []streamdb.Message) (items []*item, trailing []wire.HeldOp) {
	in := make([]wire.Message, len(msgs))
	for i, m := range msgs {
		in[i] = wire.Message{Seq: m.End.Seq, Data: m.Data}
	}
	found, trailing := sc.Scan(in)
	items = make([]*item, 0, len(found))
	j := 0
	for _, f := range found {
		for msgs[j].End.Seq != f.Seq {
			j++
		}
		end := msgs[j].End
		w := f.Wake
		if in, ok := w.(wire.InboxWake); ok {
			in.Offset = end.String()
			w = in
		}
		items = append(items, &item{seq: f.Seq, offset: end, wake: w, key: f.Key, held: f.Held})
	}
	return items, trailing
}

// modeOf is an inbox row's mode.
func modeOf(v json.RawMessage) string {
	var x struct {
		Mode string `json:"mode"`
	}
	_ = json.Unmarshal(v, &x)
	return x.Mode
}

// steerWake is the wake of a steer message handed to a running handler, at its offset.
func steerWake(key string, value json.RawMessage, end streamdb.Offset) wire.InboxWake {
	w := wire.InboxWakeOf(key, value)
	w.Offset = end.String()
	return w
}

// statusOf is an inbox row's status.
func statusOf(v json.RawMessage) string {
	var x struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(v, &x)
	return x.Status
}
