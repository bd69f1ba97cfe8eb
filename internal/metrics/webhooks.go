package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	// WebhookDeliveriesWaiting is the number of webhook deliveries waiting for a slot of
	// their target (the webhook URL's origin) or of the process: a target that answers
	// slowly or never makes its own deliveries wait, not everyone's.
	WebhookDeliveriesWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "entityd_webhook_deliveries_waiting",
		Help: "Webhook deliveries waiting for a free slot of their target or of the process.",
	})
	// WebhookSlotWait is the time a webhook delivery waited for its slots (0 for most).
	WebhookSlotWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "entityd_webhook_slot_wait_seconds",
		Help:    "Time webhook deliveries waited for a slot of their target and of the process.",
		Buckets: latencyBuckets,
	})
	// WebhookDeliveriesRefused counts deliveries that got no slot, by reason: queue_full
	// (too many deliveries already wait for the target) or wait_expired (no slot came free
	// within the attempt's window). Each is retried with backoff, like a failed request.
	WebhookDeliveriesRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "entityd_webhook_deliveries_refused_total",
		Help: "Webhook deliveries that got no slot (queue_full, wait_expired) and were put back for a retry with backoff.",
	}, []string{"reason"})
)

func init() {
	Registry.MustRegister(WebhookDeliveriesWaiting, WebhookSlotWait, WebhookDeliveriesRefused)
}

// WakesSetAside counts work of a subscription's stream given up on after failed wakes
// (dssub's give-up rule: Electric's entities).
var WakesSetAside = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "entityd_subscription_work_set_aside_total",
	Help: "Streams' work given up on (acknowledged and recorded) after their wakes failed the give-up rule's attempts.",
})

func init() { Registry.MustRegister(WakesSetAside) }
