package dssub

import (
	"context"
	"net/http"

	"github.com/entityd/entityd/streamdb"
)

// applyEffects writes a remote handler's effects in the done's transaction (after the
// fence admitted the done). A handler acknowledges the offset it read up to; when its
// own writes follow that offset directly, the acknowledgement moves past them too, so a
// handler's own output does not wake it again. Anything appended in between by others
// keeps the acknowledgement where it was, and wakes the handler once more.
func applyEffects(ctx context.Context, tx *streamdb.Tx, links []*link, req *ackRequest) error {
	byPath := make(map[string]*link, len(links))
	for _, l := range links {
		byPath[l.Path] = l
	}
	for _, st := range req.effects.Streams() {
		if byPath[normalizePath(st)] == nil {
			return fail(http.StatusConflict, codeInvalidOffset, "Effects write to "+st+", which is not a stream of this wake")
		}
	}
	appended, err := req.effects.Apply(ctx, tx)
	if err != nil {
		return err
	}
	for st, offs := range appended {
		if len(offs) == 0 {
			continue
		}
		l := byPath[normalizePath(st)]
		last := offs[len(offs)-1]
		if cursorOf(l.Tail).less(cursorOf(last)) {
			l.Tail = last
		}
		for i, a := range req.Acks {
			path := a.Path
			if a.Stream != nil {
				path = a.Stream
			}
			if path == nil || a.Offset == nil || normalizePath(*path) != l.Path {
				continue
			}
			off, kind, err := streamdb.ParseOffset(*a.Offset)
			if err != nil || kind != streamdb.OffsetConcrete || off.Seq+1 != offs[0].Seq {
				continue
			}
			moved := last.String()
			req.Acks[i].Offset = &moved
		}
	}
	return nil
}
