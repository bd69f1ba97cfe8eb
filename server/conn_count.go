package server

import (
	"net"
	"sync"

	"github.com/entityd/entityd/internal/metrics"
)

// countConns counts the listener's open connections in metrics.HTTPConnections, taken
// over ones (a hijacked SSE read) included: a connection counts until it is closed.
func countConns(l net.Listener) net.Listener { return countingListener{l} }

type countingListener struct{ net.Listener }

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	metrics.HTTPConnections.Inc()
	return &countedConn{Conn: c}, nil
}

type countedConn struct {
	net.Conn
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { metrics.HTTPConnections.Dec() })
	return c.Conn.Close()
}
