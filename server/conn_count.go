package server

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"

	"github.com/entityd/entityd/internal/metrics"
)

// countConns counts the listener's connections in metrics.HTTPConnections: "open" from
// accept to close, "active" while a request is being served on one (a connection taken
// over by an SSE read stays active until it closes). Active connections are what a
// browser's per-host limit (six over HTTP/1.1) runs out of; idle keep-alive ones are
// not.
func countConns(l net.Listener) net.Listener { return countingListener{l} }

type countingListener struct{ net.Listener }

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	metrics.HTTPConnections.WithLabelValues("open").Inc()
	return &countedConn{Conn: c}, nil
}

type countedConn struct {
	net.Conn
	mu     sync.Mutex
	active bool
	closed bool
}

func (c *countedConn) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		metrics.HTTPConnections.WithLabelValues("open").Dec()
		if c.active {
			c.active = false
			metrics.HTTPConnections.WithLabelValues("active").Dec()
		}
	}
	c.mu.Unlock()
	return c.Conn.Close()
}

// connState is the server's ConnState hook for counted connections.
func connState(nc net.Conn, state http.ConnState) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, ok := nc.(*countedConn)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	switch state {
	case http.StateActive, http.StateHijacked:
		if !c.active {
			c.active = true
			metrics.HTTPConnections.WithLabelValues("active").Inc()
		}
	case http.StateIdle, http.StateClosed:
		if c.active {
			c.active = false
			metrics.HTTPConnections.WithLabelValues("active").Dec()
		}
	}
}
