package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	// FeedSessions is the number of open feed sessions (GET /_electric/feed).
	FeedSessions = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "entityd_feed_sessions_open", Help: "Feed sessions open (GET /_electric/feed).",
	})
	// FeedRequests is the number of reads in flight through feed sessions.
	FeedRequests = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "entityd_feed_requests_in_flight", Help: "Reads in flight through feed sessions.",
	})
	// HTTPConnections is the number of HTTP connections to the server's listener, by
	// state: "open" (accepted, not yet closed) and "active" (serving a request now; a
	// connection taken over by an SSE read counts until it closes).
	HTTPConnections = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "entityd_http_connections", Help: "HTTP connections to the server's listener, by state: open, active (serving a request; taken-over SSE connections included).",
	}, []string{"state"})
)

func init() { Registry.MustRegister(FeedSessions, FeedRequests, HTTPConnections) }
