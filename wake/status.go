package wake

import (
	"context"
	"time"

	"github.com/entityd/entityd/streamdb"
)

// Status is the delivery state of one entity, as the API shows it.
type Status struct {
	// ScannedSeq: every event of the stream up to this sequence number was handled.
	ScannedSeq int64      `json:"scanned_seq"`
	Held       bool       `json:"held"`
	Holder     *string    `json:"holder"`
	Epoch      int64      `json:"epoch"`
	Attempts   int        `json:"attempts"`
	RetryAt    *time.Time `json:"retry_at"`
	LastError  *string    `json:"last_error"`
	Paused     int        `json:"paused_messages"`
	Failures   []Failure  `json:"failures"`
}

// Failure is a unit of work given up on after the last attempt.
type Failure struct {
	Seq      int64     `json:"seq"`
	Kind     string    `json:"kind"`
	Key      string    `json:"key"`
	Attempts int       `json:"attempts"`
	Error    string    `json:"error"`
	FailedAt time.Time `json:"failed_at"`
}

// StatusOf reads an entity's delivery state.
func StatusOf(ctx context.Context, pool streamdb.DB, url string) (*Status, error) {
	st := &Status{Failures: []Failure{}}
	err := pool.QueryRow(ctx, sqlStatusOf, url).
		Scan(&st.ScannedSeq, &st.Holder, &st.Epoch, &st.Attempts, &st.RetryAt, &st.LastError, &st.Held, &st.Paused)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, sqlFailuresOf, url)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var f Failure
		if err := rows.Scan(&f.Seq, &f.Kind, &f.Key, &f.Attempts, &f.Error, &f.FailedAt); err != nil {
			return nil, err
		}
		st.Failures = append(st.Failures, f)
	}
	return st, rows.Err()
}
