package dsapi

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/entityd/entityd/internal/inflight"
	"github.com/entityd/entityd/streamdb"
)

// sseKeepAlive is how often an idle SSE response gets a comment line, so that proxies
// with idle timeouts keep the connection (and dead clients are noticed).
const sseKeepAlive = 15 * time.Second

// ssePreamble is a first batch sent before reading the stream (a collection snapshot).
type ssePreamble struct {
	body []byte
	next streamdb.Offset
}

// sseControlBound is at most the size of a control event (offset, cursor, two flags).
const sseControlBound = 256

// serveSSE streams a stream as Server-Sent Events: every read batch is one "data" event
// followed by its own "control" event carrying the next offset, the cursor and whether
// the reader is up to date or the stream closed. The response ends after SSELifetime
// (clients reconnect from the last offset) or once a closed stream is fully delivered.
//
// A subscriber first catches up on its own. Once at the tail, over HTTP/1.x, its
// connection is taken over from net/http and parked in the stream's hub (sseHubs): no
// goroutine and no request state per idle subscriber, and every change is rendered once
// and written to all of them. Other connections (HTTP/2) keep a goroutine each.
//
// Each batch reserves its rendered size (bytes in flight, see budget) until it is
// written, under a write deadline of its own: an idle subscriber holds nothing and is
// never cut, and one that stops reading is disconnected once its deadline passes. The
// first batch is read, reserved and rendered before the response starts, so that a
// server short of bytes (or of its database) still answers with a status and
// Retry-After; a later batch that cannot be reserved ends the response, and the client
// reconnects from its last offset.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request, m *streamdb.Meta, rq readQuery, pre *ssePreamble) error {
	binary := !streamdb.IsText(m.ContentType)
	deadline := time.Now().Add(s.cfg.SSELifetime)
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	defer s.liveContext(ctx, cancel)()
	key := inflight.KeyFor(r, m.Path)
	var res inflight.Hold // the bytes of the batch being sent
	defer res.Release()

	cursor := nextCursor(rq.cursor)
	from, tail, closed := rq.from, m.Tail, m.Closed
	var b bytes.Buffer
	switch {
	case pre != nil:
		from = pre.next
		if tail.Seq < from.Seq {
			tail = from
		}
		n := ssePayloadBound(len(pre.body), lineEnds(pre.body), binary) + sseControlBound
		if err := s.budget.Reserve(ctx, &res, key, int64(n), "read"); err != nil {
			return err
		}
		b.Grow(n)
		writeSSEData(&b, pre.body, binary)
		upToDate := from.Seq >= tail.Seq
		writeSSEControl(&b, from, cursor, upToDate, closed && upToDate)
	case from.Seq < tail.Seq:
		next, err := s.sseBatch(ctx, key, &res, &b, m, binary, from, tail, closed, cursor)
		if err != nil {
			return err
		}
		from = next
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if binary {
		h.Set(hSSEDataEncoding, "base64")
	}
	sink, conn := s.openSSE(w)
	if sink == nil {
		return nil // the connection is gone
	}
	end := func() {
		if conn != nil {
			_ = conn.Close()
		}
	}
	// send writes what b holds and lets go of it: of the buffer when it grew large (an
	// idle subscriber keeps no batch-sized buffer), and of the reservation.
	send := func() error {
		err := sink.send(b.Bytes())
		b.Reset()
		if b.Cap() > joinBelow {
			b = bytes.Buffer{}
		}
		res.Release()
		return err
	}

	announced := false // an up-to-date control was sent for the current tail
	if b.Len() > 0 {
		upToDate := from.Seq >= tail.Seq
		if err := send(); err != nil || (closed && upToDate) {
			end()
			return nil
		}
		announced = upToDate
	}
	for {
		if from.Seq < tail.Seq {
			next, err := s.sseBatch(ctx, key, &res, &b, m, binary, from, tail, closed, cursor)
			if err != nil {
				end() // the response has started; the client reconnects
				return nil
			}
			from = next
			upToDate := from.Seq >= tail.Seq
			if err := send(); err != nil || (closed && upToDate) {
				end()
				return nil
			}
			announced = upToDate
			continue
		}
		if closed {
			writeSSEControl(&b, from, cursor, true, true)
			_ = send()
			end()
			return nil
		}
		if !announced {
			writeSSEControl(&b, from, cursor, true, false)
			if err := send(); err != nil {
				end()
				return nil
			}
			announced = true
		}
		if conn != nil {
			// Hand the idle subscriber to the stream's hub, unless the stream moved on
			// meanwhile: then catch up to where the hub is and try again.
			joined, hubTail, hubClosed := s.hubs.join(m, binary, &sseSub{conn: conn, cursor: cursor, deadline: deadline}, from)
			if joined {
				return nil
			}
			tail, closed = hubTail, hubClosed
			continue
		}
		waitCtx, waitCancel := context.WithTimeout(ctx, sseKeepAlive)
		st, err := s.streams.Wait(waitCtx, m, from)
		waitCancel()
		switch {
		case err == nil:
			tail, closed = st.Tail, st.Closed
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			if err := sink.send([]byte(sseKeepAliveComment)); err != nil {
				return nil
			}
		default:
			return nil // lifetime over, client gone, or stream deleted
		}
	}
}

// errNoMessages is a read that returned nothing before the tail it was given.
var errNoMessages = errors.New("api: no messages before the tail")

// sseBatch reads the messages after from up to tail and renders them into b as a data
// event and its control event, with res grown to their size first; it returns the
// offset after them.
func (s *Server) sseBatch(ctx context.Context, key inflight.Key, res *inflight.Hold, b *bytes.Buffer, m *streamdb.Meta, binary bool,
	from, tail streamdb.Offset, closed bool, cursor string) (streamdb.Offset, error) {
	if err := s.budget.Reserve(ctx, res, key, s.readEstimate(from, tail), "read"); err != nil {
		return from, err
	}
	msgs, err := s.streams.Read(ctx, m, from, tail)
	if err != nil {
		return from, err
	}
	if len(msgs) == 0 {
		return from, errNoMessages
	}
	msgs = stampStateOffsets(m, msgs)
	n := sseDataBound(m, msgs, binary) + sseControlBound
	if err := s.budget.Settle(ctx, res, key, int64(n)); err != nil {
		return from, err
	}
	b.Grow(n)
	writeSSEMessages(b, m, msgs, binary)
	next := msgs[len(msgs)-1].End
	upToDate := next.Seq >= tail.Seq
	writeSSEControl(b, next, cursor, upToDate, closed && upToDate)
	return next, nil
}

// sseSink is where a subscriber's events go.
type sseSink interface{ send(b []byte) error }

// connSink writes to a connection taken over from net/http, each write under a deadline
// of its own (writeTimeout) set just before it: one left over from the last write never
// touches the next, so an idle connection is never cut.
type connSink struct {
	conn    net.Conn
	timeout func(n int) time.Duration
}

func (c connSink) send(b []byte) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(c.timeout(len(b))))
	_, err := c.conn.Write(b)
	return err
}

// responseSink writes through net/http (when the connection cannot be taken over). The
// deadline is lifted after each write: over HTTP/2 a deadline that passes resets the
// stream even while nothing is being written.
type responseSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout func(n int) time.Duration
}

func (r responseSink) send(b []byte) error {
	timed := r.rc.SetWriteDeadline(time.Now().Add(r.timeout(len(b)))) == nil
	if _, err := r.w.Write(b); err != nil {
		return err
	}
	if err := r.rc.Flush(); err != nil {
		return err
	}
	if timed {
		_ = r.rc.SetWriteDeadline(time.Time{})
	}
	return nil
}

// openSSE starts the response. Over HTTP/1.x it takes the connection over from net/http
// and writes the response head itself (the body then runs until the connection closes);
// otherwise it answers through the ResponseWriter.
func (s *Server) openSSE(w http.ResponseWriter) (sseSink, net.Conn) {
	rc := http.NewResponseController(w)
	if conn, _, err := rc.Hijack(); err == nil {
		var head bytes.Buffer
		head.WriteString("HTTP/1.1 200 OK\r\n")
		w.Header().Set("Connection", "close")
		for k, vs := range w.Header() {
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n") {
					continue
				}
				head.WriteString(k)
				head.WriteString(": ")
				head.WriteString(v)
				head.WriteString("\r\n")
			}
		}
		head.WriteString("\r\n")
		sink := connSink{conn: conn, timeout: s.writeTimeout}
		if err := sink.send(head.Bytes()); err != nil {
			_ = conn.Close()
			return nil, nil
		}
		return sink, conn
	}
	w.WriteHeader(http.StatusOK)
	return responseSink{w: w, rc: rc, timeout: s.writeTimeout}, nil
}
