package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	// CommitSplits counts group-commit transactions that the database refused and that
	// were split in two and run again, so that the request it refused fails alone.
	CommitSplits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "entityd_stream_commit_splits_total",
		Help: "Group-commit transactions refused by the database and split to isolate the refused request.",
	})
	// AppendsRefused counts single append requests the database refused (after isolation).
	AppendsRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "entityd_stream_appends_refused_total",
		Help: "Append requests refused by the database on their own (their batch neighbours committed).",
	})
)

func init() { Registry.MustRegister(CommitSplits, AppendsRefused) }
