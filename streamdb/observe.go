package streamdb

import "sync"

// Change tells an observer that a stream's tail moved.
type Change struct {
	StreamID int64
	Tail     Offset
	Closed   bool
	// Local is true for commits made by this process (Path is then known too).
	Local bool
	Path  string
}

// observers are called after every commit of this process and for every commit another
// process announces. A nil slice means "changes may have been missed" (the listener
// reconnected): observers must re-check what they care about.
type observers struct {
	mu  sync.RWMutex
	fns []func([]Change)
}

// OnCommit registers fn to hear about stream changes. fn runs on the committing goroutine
// or the listener goroutine: it must be quick and must not block.
func (s *Store) OnCommit(fn func([]Change)) {
	s.obs.mu.Lock()
	s.obs.fns = append(s.obs.fns, fn)
	s.obs.mu.Unlock()
}

func (s *Store) tellObservers(changes []Change) {
	s.obs.mu.RLock()
	fns := s.obs.fns
	s.obs.mu.RUnlock()
	for _, fn := range fns {
		fn(changes)
	}
}
