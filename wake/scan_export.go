package wake

import "github.com/entityd/entityd/streamdb"

// Scanner turns an entity's stream events into the wakes its handler gets, with the same
// rules as the in-process dispatcher (paused messages held until released, queued
// messages withdrawn before delivery skipped). The Go SDK uses it when it runs outside
// the server and reads the stream over HTTP.
type Scanner struct{ sc *scanner }

// NewScanner starts at the beginning of a stream.
func NewScanner() *Scanner { return &Scanner{sc: newScanner(nil, nil)} }

// ScannedWake is one unit of work found by a Scanner.
type ScannedWake struct {
	Seq  int64 // the event's position in the stream, from 1
	Key  string
	Wake Wake
}

// Scan classifies events, which follow the events scanned before; firstSeq is the
// position of events[0].
func (s *Scanner) Scan(firstSeq int64, events [][]byte) []ScannedWake {
	msgs := make([]streamdb.Message, len(events))
	for i, data := range events {
		msgs[i] = streamdb.Message{Data: data, End: streamdb.Offset{Seq: firstSeq + int64(i)}}
	}
	items, _ := s.sc.scan(msgs)
	out := make([]ScannedWake, len(items))
	for i, it := range items {
		w := it.wake
		if in, ok := w.(InboxWake); ok {
			in.Offset = "" // the byte position is not known to a reader of JSON batches
			w = in
		}
		out[i] = ScannedWake{Seq: it.seq, Key: it.key, Wake: w}
	}
	return out
}
