package metrics

import "github.com/prometheus/client_golang/prometheus"

// BytesRefused counts requests answered 503 because the bytes they needed were not free
// within the wait, by kind: "read" (a response body) or "body" (a request body).
var BytesRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "entityd_bytes_in_flight_refused_total",
	Help: "Requests refused with 503 because the bytes-in-flight budget was full, by kind (read, body).",
}, []string{"kind"})

var inFlight sources

func init() {
	Registry.MustRegister(BytesRefused, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "entityd_bytes_in_flight",
		Help: "Bytes reserved by requests in flight: response bodies being written, request bodies being read and stored.",
	}, func() float64 { return float64(inFlight.sum()) }))
}

// TrackBytesInFlight adds a server's bytes in flight to the gauge until the returned
// function is called.
func TrackBytesInFlight(bytes func() int) (untrack func()) { return inFlight.add(bytes) }
