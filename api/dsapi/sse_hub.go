package dsapi

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/inflight"
	"github.com/entityd/entityd/streamdb"
)

// sseBroadcastTimeout bounds one write to one parked subscriber. The kernel's socket
// buffer absorbs events for any reader that keeps up; one that cannot take an event
// within this time is disconnected (it reconnects from its last offset) rather than
// delaying everybody else.
const sseBroadcastTimeout = 200 * time.Millisecond

// sseHubs holds one hub per stream that has idle SSE subscribers parked at its tail.
type sseHubs struct {
	s    *Server
	mu   sync.Mutex
	hubs map[int64]*streamHub
}

// sseSub is a parked subscriber: its connection, its latest cursor and when its
// response ends.
type sseSub struct {
	conn     net.Conn
	cursor   string
	deadline time.Time
}

// streamHub follows one stream for its parked subscribers: it waits for each change,
// renders the events once, and writes them to every subscriber.
type streamHub struct {
	hubs    *sseHubs
	meta    *streamdb.Meta
	binary  bool
	mu      sync.Mutex
	tail    streamdb.Offset
	closed  bool
	stopped bool
	subs    map[*sseSub]struct{}
}

// join parks sub at the hub of m's stream if the hub is at from (the subscriber's
// position); otherwise it reports the hub's position so the subscriber can catch up.
func (h *sseHubs) join(m *streamdb.Meta, binary bool, sub *sseSub, from streamdb.Offset) (bool, streamdb.Offset, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s.live.Err() != nil {
		_ = sub.conn.Close()
		return true, from, false
	}
	hub := h.hubs[m.ID]
	if hub == nil {
		hub = &streamHub{hubs: h, meta: m, binary: binary, tail: from, subs: map[*sseSub]struct{}{}}
		if !h.s.bg.Go(hub.run) { // the server is shutting down
			_ = sub.conn.Close()
			return true, from, false
		}
		h.hubs[m.ID] = hub
	}
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if hub.tail.Seq != from.Seq || hub.closed {
		return false, hub.tail, hub.closed
	}
	hub.subs[sub] = struct{}{}
	return true, from, false
}

// count reports the parked subscribers (for tests and metrics).
func (h *sseHubs) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, hub := range h.hubs {
		hub.mu.Lock()
		n += len(hub.subs)
		hub.mu.Unlock()
	}
	return n
}

func (hub *streamHub) run() {
	ctx := hub.hubs.s.live
	log := hub.hubs.s.log
	for {
		wait, ok := hub.expire()
		if !ok {
			return
		}
		waitCtx, cancel := context.WithTimeout(ctx, wait)
		res, err := hub.hubs.s.streams.Wait(waitCtx, hub.meta, hub.current())
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			hub.broadcast([]byte(sseKeepAliveComment), nil)
			continue
		default:
			if ctx.Err() == nil && !errors.Is(err, streamdb.ErrNotFound) {
				log.Warn("SSE hub stopped", zap.String("stream", hub.meta.Path), zap.Error(err))
			}
			hub.stop() // shutdown, or the stream was deleted: subscribers reconnect
			return
		}
		if err := hub.deliver(ctx, res); err != nil {
			if ctx.Err() == nil && !inflight.Busy(err) { // a full budget is counted, not logged
				log.Warn("SSE hub could not read the stream", zap.String("stream", hub.meta.Path), zap.Error(err))
			}
			hub.stop()
			return
		}
	}
}

// deliver sends everything between the hub's position and res to every subscriber:
// one data event per read batch, each followed by its control event, rendered once.
// Each batch reserves its size from the process-wide bytes in flight while it is read
// and written (the hub serves many principals: no share of its own); a hub that cannot
// get them within the wait stops, and its subscribers reconnect — each then under its
// own principal's share.
func (hub *streamHub) deliver(ctx context.Context, res streamdb.WaitResult) error {
	from := hub.current()
	for from.Seq < res.Tail.Seq || (res.Closed && !hub.isClosed()) {
		next, end, err := hub.deliverBatch(ctx, from, res)
		if err != nil {
			return err
		}
		from = next
		if end {
			hub.stop()
			return nil
		}
	}
	return nil
}

// deliverBatch reads, renders and broadcasts the batch after from; end is the stream's
// end delivered.
func (hub *streamHub) deliverBatch(ctx context.Context, from streamdb.Offset, res streamdb.WaitResult) (streamdb.Offset, bool, error) {
	s := hub.hubs.s
	var held inflight.Hold
	defer held.Release()
	var b bytes.Buffer
	next := from
	if from.Seq < res.Tail.Seq {
		if err := s.budget.Reserve(ctx, &held, inflight.Shared, s.readEstimate(from, res.Tail), "read"); err != nil {
			return from, false, err
		}
		msgs, err := s.streams.Read(ctx, hub.meta, from, res.Tail)
		if err != nil {
			return from, false, err
		}
		if len(msgs) == 0 {
			return from, false, errNoMessages
		}
		msgs = stampStateOffsets(hub.meta, msgs) // once for every subscriber
		n := sseDataBound(hub.meta, msgs, hub.binary) + sseControlBound
		if err := s.budget.Settle(ctx, &held, inflight.Shared, int64(n)); err != nil {
			return from, false, err
		}
		b.Grow(n)
		next = msgs[len(msgs)-1].End
		writeSSEMessages(&b, hub.meta, msgs, hub.binary)
	}
	upToDate := next.Seq >= res.Tail.Seq
	end := res.Closed && upToDate
	cursor := hub.cursor()
	writeSSEControl(&b, next, cursor, upToDate, end)
	hub.broadcast(b.Bytes(), &broadcastState{tail: next, closed: end, cursor: cursor})
	return next, end, nil
}

type broadcastState struct {
	tail   streamdb.Offset
	closed bool
	cursor string
}

// broadcast writes payload to every subscriber parked when the hub moves to st (the
// subscribers and the new position are taken together, so a subscriber that joins at the
// new position does not get the same events twice). Subscribers whose write fails are
// disconnected.
func (hub *streamHub) broadcast(payload []byte, st *broadcastState) {
	hub.mu.Lock()
	targets := make([]*sseSub, 0, len(hub.subs))
	for sub := range hub.subs {
		targets = append(targets, sub)
		if st != nil {
			sub.cursor = st.cursor
		}
	}
	if st != nil {
		hub.tail, hub.closed = st.tail, st.closed
	}
	hub.mu.Unlock()
	var failed []*sseSub
	for _, sub := range targets {
		_ = sub.conn.SetWriteDeadline(time.Now().Add(sseBroadcastTimeout))
		if _, err := sub.conn.Write(payload); err != nil {
			failed = append(failed, sub)
		}
	}
	if len(failed) > 0 {
		hub.mu.Lock()
		for _, sub := range failed {
			delete(hub.subs, sub)
			_ = sub.conn.Close()
		}
		hub.mu.Unlock()
	}
}

// expire ends the responses whose lifetime is over and returns how long to wait for the
// next change before a keep-alive or an expiry is due; ok is false when the hub has no
// subscribers left and stopped.
func (hub *streamHub) expire() (time.Duration, bool) {
	hub.hubs.mu.Lock()
	defer hub.hubs.mu.Unlock()
	hub.mu.Lock()
	defer hub.mu.Unlock()
	now := time.Now()
	wait := sseKeepAlive
	for sub := range hub.subs {
		if !now.Before(sub.deadline) {
			delete(hub.subs, sub)
			_ = sub.conn.Close()
			continue
		}
		if d := sub.deadline.Sub(now); d < wait {
			wait = d
		}
	}
	if len(hub.subs) == 0 {
		hub.stopped = true
		if hub.hubs.hubs[hub.meta.ID] == hub {
			delete(hub.hubs.hubs, hub.meta.ID)
		}
		return 0, false
	}
	return wait, true
}

// stop disconnects every subscriber and retires the hub.
func (hub *streamHub) stop() {
	hub.hubs.mu.Lock()
	defer hub.hubs.mu.Unlock()
	hub.mu.Lock()
	defer hub.mu.Unlock()
	for sub := range hub.subs {
		_ = sub.conn.Close()
	}
	hub.subs = map[*sseSub]struct{}{}
	hub.stopped = true
	if hub.hubs.hubs[hub.meta.ID] == hub {
		delete(hub.hubs.hubs, hub.meta.ID)
	}
}

func (hub *streamHub) current() streamdb.Offset {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	return hub.tail
}

func (hub *streamHub) isClosed() bool {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	return hub.closed
}

// cursor is the cursor for the next control event: the current interval, or past the
// largest cursor any subscriber was given (cursors never go back for a client).
func (hub *streamHub) cursor() string {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	cur := nextCursor("")
	best, _ := strconv.ParseInt(cur, 10, 64)
	for sub := range hub.subs {
		if c, err := strconv.ParseInt(sub.cursor, 10, 64); err == nil && c > best {
			best = c
		}
	}
	return strconv.FormatInt(best, 10)
}

// ParkedSubscribers reports how many idle SSE subscribers are parked in stream hubs.
func (s *Server) ParkedSubscribers() int { return s.hubs.count() }
