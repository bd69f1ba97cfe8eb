package runtime

import (
	"container/list"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/entityd/entityd/wire"
)

// externalEntity is what a External remembers of an entity between wakes: its state and
// scan as of an offset, so that the next wake reads only what came after.
type externalEntity struct {
	mu      sync.Mutex // one run of the entity at a time in this process
	path    string
	state   *wire.State
	scanner *wire.Scanner
	next    string // where the next read starts ("-1": nothing read yet)
	elem    *list.Element
}

// stateCache keeps the most recently used entities' states, at most max of them.
type stateCache struct {
	mu   sync.Mutex
	max  int
	byID map[string]*externalEntity
	lru  *list.List
}

func newStateCache(max int) *stateCache {
	return &stateCache{max: max, byID: map[string]*externalEntity{}, lru: list.New()}
}

// get returns the entity's cached state (a fresh one when none is kept).
func (c *stateCache) get(path string) *externalEntity {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[path]; ok {
		c.lru.MoveToFront(e.elem)
		return e
	}
	e := &externalEntity{path: path}
	e.reset()
	e.elem = c.lru.PushFront(e)
	c.byID[path] = e
	// Evict the least recently used entities that no run holds (an entity in use stays,
	// so that its runs never split over two states).
	for el := c.lru.Back(); el != nil && c.lru.Len() > c.max; {
		prev := el.Prev()
		old := el.Value.(*externalEntity)
		if old != e && old.mu.TryLock() {
			c.lru.Remove(el)
			delete(c.byID, old.path)
			old.mu.Unlock()
		}
		el = prev
	}
	return e
}

// reset forgets what was read: the next read starts at the beginning of the stream.
func (e *externalEntity) reset() {
	e.state, e.scanner, e.next = wire.NewState(), wire.NewScanner(nil, nil), "-1"
}

// catchUp reads the stream from where the entity was left to its tail, one chunk at a
// time, and hands each chunk's wakes after ackedSeq (the events the subscription has
// acknowledged) to fn with the offset read to; the state includes the chunk.
func (e *externalEntity) catchUp(ctx context.Context, r *External, ackedSeq int64, fn func([]wire.ScannedWake, string) error) error {
	for {
		first, err := offsetSeq(e.next)
		if err != nil {
			return err
		}
		c, err := r.readStream(ctx, e.path, e.next, false)
		if err != nil {
			return err
		}
		end, err := offsetSeq(c.next)
		if err != nil {
			return err
		}
		if end-first != int64(len(c.events)) {
			return fmt.Errorf("runtime: %s: read %d events between offsets %s and %s", e.path, len(c.events), e.next, c.next)
		}
		for i, ev := range c.events {
			e.state.Apply(first+1+int64(i), ev)
		}
		var items []wire.ScannedWake
		msgs := make([]wire.Message, len(c.events))
		for i, ev := range c.events {
			msgs[i] = wire.Message{Seq: first + 1 + int64(i), Data: ev}
		}
		found, _ := e.scanner.Scan(msgs)
		for _, w := range found {
			if w.Seq > ackedSeq {
				items = append(items, w)
			}
		}
		e.next = c.next
		if err := fn(items, e.next); err != nil {
			return err
		}
		if c.upToDate || len(c.events) == 0 {
			return nil
		}
	}
}

// offsetSeq is the number of messages before an offset of entityd's (-1: none). A handler
// outside the server counts events by it; another server's offsets are refused.
func offsetSeq(off string) (int64, error) {
	if off == "" || off == "-1" {
		return 0, nil
	}
	seq, _, ok := strings.Cut(off, "_")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || err != nil || n < 0 {
		return 0, fmt.Errorf("runtime: %q is not an entityd stream offset", off)
	}
	return n, nil
}
