package api

import (
	"io"
	"net/http"
	"time"
)

// bodyDeadline gives a request body BodyReadTimeout to arrive in full. A client that
// trickles its body (slowloris) is cut off with 408 and its connection closed, instead of
// holding a connection and a goroutine for as long as it likes. The deadline ends as soon
// as the body has been read, so it never touches a response that takes long on purpose
// (long-poll, SSE) — those have no body to wait for.
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || s.cfg.BodyReadTimeout <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout)); err != nil {
			next.ServeHTTP(w, r) // not a plain connection (a test recorder): nothing to bound
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline once the body has been read to its end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
