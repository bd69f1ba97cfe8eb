package streamdb

import "context"

// Watch keeps the tail of stream id known in memory (fed by this process's commits and
// other processes' notifications) until unwatch is called, so that CurrentTail costs no
// query. Long-lived consumers of one stream (a wake worker) use it.
func (s *Store) Watch(id int64) (unwatch func()) {
	s.notifier.acquire(id)
	return func() { s.notifier.release(id) }
}

// CurrentTail returns the stream's tail and whether it is closed: from memory when the
// stream is watched and its state known, else from the database.
func (s *Store) CurrentTail(ctx context.Context, id int64) (Offset, bool, error) {
	_, st := s.notifier.current(id)
	if st.known && !st.gone {
		return st.tail, st.closed, nil
	}
	st, err := s.freshState(ctx, id)
	if err != nil {
		return Offset{}, false, err
	}
	if st.gone {
		return Offset{}, false, ErrNotFound
	}
	s.notifier.setIfUnknown(id, st)
	return st.tail, st.closed, nil
}
