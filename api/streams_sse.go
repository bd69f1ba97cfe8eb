package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"time"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
)

// sseKeepAlive is how often an idle SSE response gets a comment line, so that proxies
// with idle timeouts keep the connection.
const sseKeepAlive = 15 * time.Second

// serveSSE streams a stream as Server-Sent Events: every read batch is one "data" event
// followed by its own "control" event carrying the next offset, the cursor and whether
// the reader is up to date or the stream closed. The response ends after SSELifetime
// (clients reconnect from the last offset) or once a closed stream is fully delivered.
// ssePreamble is a first batch sent before reading the stream (a collection snapshot).
type ssePreamble struct {
	body []byte
	next streamdb.Offset
}

func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request, m *streamdb.Meta, rq readQuery, pre *ssePreamble) error {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	binary := !streamdb.IsText(m.ContentType)
	if binary {
		h.Set(hSSEDataEncoding, "base64")
	}
	w.WriteHeader(http.StatusOK)
	// net/http already buffers the response; writing through it directly keeps an idle
	// subscriber's memory to the connection's own buffers.
	bw := &sseWriter{w: w}
	flush := func() error {
		if bw.err != nil {
			return bw.err
		}
		return rc.Flush()
	}

	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.SSELifetime)
	defer cancel()
	defer s.liveContext(ctx, cancel)()
	cursor := nextCursor(rq.cursor)
	from, tail, closed := rq.from, m.Tail, m.Closed
	announced := false // an up-to-date control was sent for the current tail
	if pre != nil {
		from = pre.next
		if tail.Seq < from.Seq {
			tail = from
		}
		writeSSEData(bw, pre.body, binary)
		upToDate := from.Seq >= tail.Seq
		writeSSEControl(bw, from, cursor, upToDate, closed && upToDate)
		if err := flush(); err != nil || (closed && upToDate) {
			return nil
		}
		announced = upToDate
	}
	for {
		if from.Seq < tail.Seq {
			msgs, err := s.streams.Read(ctx, m, from, tail)
			if err != nil {
				return nil // the response has started; the client reconnects
			}
			if len(msgs) == 0 {
				return nil
			}
			from = msgs[len(msgs)-1].End
			writeSSEData(bw, renderBody(m, msgs), binary)
			upToDate := from.Seq >= tail.Seq
			writeSSEControl(bw, from, cursor, upToDate, closed && upToDate)
			if err := flush(); err != nil {
				return nil
			}
			if closed && upToDate {
				return nil
			}
			announced = upToDate
			continue
		}
		if closed {
			writeSSEControl(bw, from, cursor, true, true)
			_ = flush()
			return nil
		}
		if !announced {
			writeSSEControl(bw, from, cursor, true, false)
			if err := flush(); err != nil {
				return nil
			}
			announced = true
		}
		waitCtx, waitCancel := context.WithTimeout(ctx, sseKeepAlive)
		res, err := s.streams.Wait(waitCtx, m, from)
		waitCancel()
		switch {
		case err == nil:
			tail, closed = res.Tail, res.Closed
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			_, _ = bw.WriteString(": keep-alive\n\n")
			if err := flush(); err != nil {
				return nil
			}
		default:
			return nil // lifetime over, client gone, or stream deleted
		}
	}
}

// writeSSEData writes one data event. Text is split into data lines on CR, LF and CRLF,
// so bytes in the payload can never end the event early; binary is one base64 line.
func writeSSEData(bw *sseWriter, payload []byte, binary bool) {
	_, _ = bw.WriteString("event: data\n")
	if binary {
		_, _ = bw.WriteString("data:")
		enc := base64.NewEncoder(base64.StdEncoding, bw)
		_, _ = enc.Write(payload)
		_ = enc.Close()
		_, _ = bw.WriteString("\n\n")
		return
	}
	for {
		i := bytes.IndexAny(payload, "\r\n")
		line := payload
		if i >= 0 {
			line = payload[:i]
		}
		writeDataLine(bw, line)
		if i < 0 {
			break
		}
		if payload[i] == '\r' && i+1 < len(payload) && payload[i+1] == '\n' {
			i++
		}
		payload = payload[i+1:]
	}
	_ = bw.WriteByte('\n')
}

func writeSSEControl(bw *sseWriter, next streamdb.Offset, cursor string, upToDate, closed bool) {
	var o rawjson.Object
	o.String("streamNextOffset", next.String())
	if !closed {
		o.String("streamCursor", cursor)
	}
	if upToDate || closed {
		o.Bool("upToDate", true)
	}
	if closed {
		o.Bool("streamClosed", true)
	}
	_, _ = bw.WriteString("event: control\n")
	writeDataLine(bw, o.Bytes())
	_ = bw.WriteByte('\n')
}

// writeDataLine writes "data:<line>". SSE parsers drop one space after the colon, so a
// line that itself starts with a space gets an extra one to keep its own.
func writeDataLine(bw *sseWriter, line []byte) {
	_, _ = bw.WriteString("data:")
	if len(line) > 0 && line[0] == ' ' {
		_ = bw.WriteByte(' ')
	}
	_, _ = bw.Write(line)
	_ = bw.WriteByte('\n')
}

// sseWriter writes SSE text to the response, remembering the first error so that a
// vanished client ends the loop at the next flush.
type sseWriter struct {
	w   http.ResponseWriter
	err error
}

func (s *sseWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

func (s *sseWriter) WriteString(v string) (int, error) { return s.Write([]byte(v)) }

func (s *sseWriter) WriteByte(c byte) error {
	_, err := s.Write([]byte{c})
	return err
}
