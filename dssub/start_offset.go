package dssub

import (
	"context"

	"github.com/entityd/entityd/streamdb"
)

// startOffset is where an Electric runtime's wake starts on stream l: the offset stamped
// on its first unacknowledged message (the runtime treats the events at or after the
// wake's offset as this wake's input and the ones before as history). Every pending
// message counts, not only the last: several can be appended in one transaction (a
// future_send's message and its manifest status), and an offset at the tail would hide
// all but the last. A stream with nothing pending starts at its tail.
func startOffset(ctx context.Context, tx *streamdb.Tx, l *link) (string, error) {
	if !l.pending() {
		return l.Tail.String(), nil
	}
	off, err := tx.OffsetAfter(ctx, l.StreamID, max(l.Acked.Seq, 0)+1)
	if err != nil {
		return "", err
	}
	return off.String(), nil
}

// primaryStart is startOffset of the wake's primary stream ("" when it lists none).
func primaryStart(ctx context.Context, tx *streamdb.Tx, listed []*link, primary string) (string, error) {
	for _, l := range listed {
		if l.Path == primary {
			return startOffset(ctx, tx, l)
		}
	}
	return "", nil
}
