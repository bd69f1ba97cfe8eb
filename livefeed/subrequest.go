package livefeed

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"unicode/utf8"
)

// flushAt is how much a read may write before its bytes go out without a Flush.
const flushAt = 32 << 10

// subRequest is one read of a session and the ResponseWriter it is answered through:
// its head, body and end become events on the session.
type subRequest struct {
	id     string
	ss     *session
	ctx    context.Context
	cancel context.CancelFunc

	header   http.Header
	status   int
	wroteHdr bool
	buf      bytes.Buffer
	failed   error
}

type headEvent struct {
	ID      string            `json:"id"`
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
}

type bodyEvent struct {
	ID   string `json:"id"`
	Data string `json:"data,omitempty"`
	B64  string `json:"b64,omitempty"`
}

type idEvent struct {
	ID      string `json:"id"`
	Message string `json:"message,omitempty"`
}

func (sr *subRequest) run(h http.Handler, req *http.Request) {
	sr.header = http.Header{}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				sr.fail("the read was aborted")
				return
			}
			sr.fail("the read failed")
			return
		}
	}()
	h.ServeHTTP(sr, req)
	if sr.failed != nil || sr.ctx.Err() != nil {
		return
	}
	sr.WriteHeader(http.StatusOK)
	if err := sr.flush(); err != nil {
		return
	}
	_ = sr.ss.send(sr.ctx, event("end", idEvent{ID: sr.id}))
}

// fail tells the reader the read ended without its response (a cancelled read is not
// told: its reader asked for that).
func (sr *subRequest) fail(msg string) {
	_ = sr.ss.send(sr.ctx, event("fail", idEvent{ID: sr.id, Message: msg}))
}

func (sr *subRequest) Header() http.Header { return sr.header }

func (sr *subRequest) WriteHeader(status int) {
	if sr.wroteHdr || status < 200 && status != http.StatusSwitchingProtocols {
		return
	}
	sr.wroteHdr = true
	sr.status = status
	hs := make(map[string]string, len(sr.header))
	for k, vs := range sr.header {
		if hopHeaders[k] || len(vs) == 0 {
			continue
		}
		v := vs[0]
		for _, more := range vs[1:] {
			v += ", " + more
		}
		hs[k] = v
	}
	if err := sr.ss.send(sr.ctx, event("head", headEvent{ID: sr.id, Status: status, Headers: hs})); err != nil {
		sr.failed = err
	}
}

func (sr *subRequest) Write(b []byte) (int, error) {
	if !sr.wroteHdr {
		sr.WriteHeader(http.StatusOK)
	}
	if sr.failed != nil {
		return 0, sr.failed
	}
	sr.buf.Write(b)
	if sr.buf.Len() >= flushAt {
		if err := sr.flush(); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// Flush sends what the handler wrote so far as one body event.
func (sr *subRequest) Flush() { _ = sr.flush() }

func (sr *subRequest) flush() error {
	if !sr.wroteHdr {
		sr.WriteHeader(http.StatusOK)
	}
	if sr.failed != nil {
		return sr.failed
	}
	if sr.buf.Len() == 0 {
		return nil
	}
	data := sr.buf.Bytes()
	ev := bodyEvent{ID: sr.id}
	if utf8.Valid(data) {
		ev.Data = string(data)
	} else {
		ev.B64 = base64.StdEncoding.EncodeToString(data)
	}
	if err := sr.ss.send(sr.ctx, event("body", ev)); err != nil {
		sr.failed = err
		return err
	}
	sr.buf.Reset()
	return nil
}
