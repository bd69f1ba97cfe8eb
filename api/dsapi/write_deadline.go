package dsapi

import (
	"io"
	"net/http"
	"time"
)

// writeTimeout is how long writing n bytes to a client may take: WriteTimeout (30 s by
// default: room for a slow start, a congested link, a client that pauses) plus n at
// WriteMinRate (64 KiB/s, half a megabit: slower than any client that could follow a
// stream). An 8 MiB message gets 30 s + 128 s. The timeout bounds how long a client that
// stops reading holds its response — and the bytes it reserved — not how long a healthy
// client may stay connected: live reads set it per event.
func (s *Server) writeTimeout(n int) time.Duration {
	return s.cfg.WriteTimeout + time.Duration(int64(n)*int64(time.Second)/s.cfg.WriteMinRate)
}

// writeBody writes a response body of n bytes (status and headers already decided)
// under a write deadline. When the deadline passes first, the write fails, net/http
// closes the connection, and the handler returns and releases what the body held. The
// deadline also covers net/http's final flush after the handler; net/http lifts it then,
// so the next request on a keep-alive connection starts without one (the server has no
// WriteTimeout of its own: it would cut live reads).
func (s *Server) writeBody(w http.ResponseWriter, n int, write func(io.Writer) error) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.writeTimeout(n)))
	_ = write(w) // a failed write has closed the connection: nothing left to answer
}
