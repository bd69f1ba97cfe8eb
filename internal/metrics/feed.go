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
	// HTTPConnections is the number of HTTP connections the server holds open (taken
	// over ones included), counted at its listener.
	HTTPConnections = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "entityd_http_connections_open", Help: "HTTP connections open to the server's listener (taken-over connections included).",
	})
)

func init() { Registry.MustRegister(FeedSessions, FeedRequests, HTTPConnections) }
