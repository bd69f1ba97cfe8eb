package api

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/entityd/entityd/streamdb"
)

// sseKeepAlive is how often an idle SSE response gets a comment line, so that proxies
// with idle timeouts keep the connection (and dead clients are noticed).
const sseKeepAlive = 15 * time.Second

// sseWriteTimeout bounds one write to a subscriber during its catch-up.
const sseWriteTimeout = 10 * time.Second

// ssePreamble is a first batch sent before reading the stream (a collection snapshot).
type ssePreamble struct {
	body []byte
	next streamdb.Offset
}

// serveSSE streams a stream as Server-Sent Events: every read batch is one "data" event
// followed by its own "control" event carrying the next offset, the cursor and whether
// the reader is up to date or the stream closed. The response ends after SSELifetime
// (clients reconnect from the last offset) or once a closed stream is fully delivered.
//
// A subscriber first catches up on its own. Once at the tail, over HTTP/1.x, its
// connection is taken over from net/http and parked in the stream's hub (sseHubs): no
// goroutine and no request state per idle subscriber, and every change is rendered once
// and written to all of them. Other connections (HTTP/2) keep a goroutine each.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request, m *streamdb.Meta, rq readQuery, pre *ssePreamble) error {
	binary := !streamdb.IsText(m.ContentType)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if binary {
		h.Set(hSSEDataEncoding, "base64")
	}
	deadline := time.Now().Add(s.cfg.SSELifetime)
	sink, conn := s.openSSE(w)
	if sink == nil {
		return nil // the connection is gone
	}
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	defer s.liveContext(ctx, cancel)()
	end := func() {
		if conn != nil {
			_ = conn.Close()
		}
	}

	cursor := nextCursor(rq.cursor)
	from, tail, closed := rq.from, m.Tail, m.Closed
	announced := false // an up-to-date control was sent for the current tail
	var b bytes.Buffer
	if pre != nil {
		from = pre.next
		if tail.Seq < from.Seq {
			tail = from
		}
		writeSSEData(&b, pre.body, binary)
		upToDate := from.Seq >= tail.Seq
		writeSSEControl(&b, from, cursor, upToDate, closed && upToDate)
		if err := sink.send(b.Bytes()); err != nil || (closed && upToDate) {
			end()
			return nil
		}
		b.Reset()
		announced = upToDate
	}
	for {
		if from.Seq < tail.Seq {
			msgs, err := s.streams.Read(ctx, m, from, tail)
			if err != nil || len(msgs) == 0 {
				end() // the response has started; the client reconnects
				return nil
			}
			from = msgs[len(msgs)-1].End
			writeSSEData(&b, renderBody(m, msgs), binary)
			upToDate := from.Seq >= tail.Seq
			writeSSEControl(&b, from, cursor, upToDate, closed && upToDate)
			err = sink.send(b.Bytes())
			b.Reset()
			if err != nil || (closed && upToDate) {
				end()
				return nil
			}
			announced = upToDate
			continue
		}
		if closed {
			writeSSEControl(&b, from, cursor, true, true)
			_ = sink.send(b.Bytes())
			end()
			return nil
		}
		if !announced {
			writeSSEControl(&b, from, cursor, true, false)
			err := sink.send(b.Bytes())
			b.Reset()
			if err != nil {
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
		res, err := s.streams.Wait(waitCtx, m, from)
		waitCancel()
		switch {
		case err == nil:
			tail, closed = res.Tail, res.Closed
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			if err := sink.send([]byte(sseKeepAliveComment)); err != nil {
				return nil
			}
		default:
			return nil // lifetime over, client gone, or stream deleted
		}
	}
}

// sseSink is where a subscriber's events go.
type sseSink interface{ send(b []byte) error }

// connSink writes to a connection taken over from net/http.
type connSink struct{ conn net.Conn }

func (c connSink) send(b []byte) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	_, err := c.conn.Write(b)
	return err
}

// responseSink writes through net/http (when the connection cannot be taken over).
type responseSink struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (r responseSink) send(b []byte) error {
	if _, err := r.w.Write(b); err != nil {
		return err
	}
	return r.rc.Flush()
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
		sink := connSink{conn: conn}
		if err := sink.send(head.Bytes()); err != nil {
			_ = conn.Close()
			return nil, nil
		}
		return sink, conn
	}
	w.WriteHeader(http.StatusOK)
	return responseSink{w: w, rc: rc}, nil
}
