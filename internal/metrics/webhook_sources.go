package metrics

import "github.com/prometheus/client_golang/prometheus"

// WebhookSourceDeliveries counts deliveries to webhook sources by what became of them:
// appended, duplicate (a redelivery), unsigned, forged, too_large, rate_limited, bad
// (a signed delivery the server cannot take), not_found, failed (its append failed).
var WebhookSourceDeliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "entityd_webhook_source_deliveries_total",
	Help: "Deliveries to webhook sources (POST /_electric/webhook-deliveries/…), by result.",
}, []string{"result"})

func init() { Registry.MustRegister(WebhookSourceDeliveries) }
