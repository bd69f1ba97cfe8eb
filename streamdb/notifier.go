package streamdb

import "sync"

// notifier wakes readers parked at the tail of a stream. Each watched stream has a
// channel that is closed (and replaced) whenever the stream changes; the publisher also
// leaves the new tail behind so that thousands of woken readers need not ask Postgres
// for it.
type notifier struct {
	mu      sync.Mutex
	watches map[int64]*watch
}

type watch struct {
	ch      chan struct{}
	state   tailState
	waiters int
}

// tailState is what a publisher knows about a stream after a change. known is false
// when the change came from a source that did not say (a coalesced "*" notification or
// a reconnect of the listener); readers must then look the tail up themselves.
type tailState struct {
	tail   Offset
	closed bool
	gone   bool
	known  bool
	// recent are the messages of the commit that produced tail (this process's commits
	// only), ending at tail: readers woken by that commit take them from here instead of
	// asking Postgres.
	recent []Message
}

func newNotifier() *notifier { return &notifier{watches: map[int64]*watch{}} }

// acquire registers interest in id; release must follow.
func (n *notifier) acquire(id int64) {
	n.mu.Lock()
	w := n.watches[id]
	if w == nil {
		w = &watch{ch: make(chan struct{})}
		n.watches[id] = w
	}
	w.waiters++
	n.mu.Unlock()
}

func (n *notifier) release(id int64) {
	n.mu.Lock()
	if w := n.watches[id]; w != nil {
		w.waiters--
		if w.waiters <= 0 {
			delete(n.watches, id)
		}
	}
	n.mu.Unlock()
}

// current returns the channel closed by the next change of id, and the state the last
// change left. The stream must be acquired.
func (n *notifier) current(id int64) (<-chan struct{}, tailState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w := n.watches[id]
	if w == nil {
		// not acquired: behave as an already-fired channel so callers re-check
		ch := make(chan struct{})
		close(ch)
		return ch, tailState{}
	}
	return w.ch, w.state
}

// publish records a change of id and wakes its readers. Streams nobody watches cost a
// map lookup.
func (n *notifier) publish(id int64, st tailState) {
	n.mu.Lock()
	if w := n.watches[id]; w != nil {
		// Commits of one stream can be announced out of order (lanes, transactions and
		// other processes announce from different goroutines): never move a known tail back.
		if st.gone || !w.state.known || w.state.gone || st.tail.Seq >= w.state.tail.Seq {
			w.state = st
		}
		close(w.ch)
		w.ch = make(chan struct{})
	}
	n.mu.Unlock()
}

// publishAll wakes every reader with an unknown state (after a lost notification channel).
func (n *notifier) publishAll() {
	n.mu.Lock()
	for _, w := range n.watches {
		w.state = tailState{}
		close(w.ch)
		w.ch = make(chan struct{})
	}
	n.mu.Unlock()
}

// watched reports how many streams have readers (for metrics and tests).
func (n *notifier) watched() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.watches)
}

// setIfUnknown records st for a watched stream whose state no publish has set yet.
func (n *notifier) setIfUnknown(id int64, st tailState) {
	n.mu.Lock()
	if w := n.watches[id]; w != nil && !w.state.known {
		w.state = st
	}
	n.mu.Unlock()
}
