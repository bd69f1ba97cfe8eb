package streamdb

import (
	"time"

	"github.com/jackc/pgx/v5"
)

// ProducerTuple identifies one append of an idempotent producer.
type ProducerTuple struct {
	ID    string
	Epoch int64
	Seq   int64
}

// Meta is a stream's configuration and state as stored.
type Meta struct {
	ID            int64
	Path          string
	ContentType   string
	Tail          Offset
	Closed        bool
	ClosedBy      *ProducerTuple
	LastStreamSeq *string
	TTLSeconds    *int64
	ExpiresAt     *time.Time
	LastAccessAt  time.Time
	CreatedAt     time.Time
	Refcount      int
	SoftDeleted   bool

	// Fork: messages with Seq <= ForkSeq are read from the source stream.
	ForkSourceID   int64
	ForkSourcePath string
	ForkSeq        int64
	ForkPos        int64
	ForkOffset     *string
	ForkSubOffset  *int64

	// Access is what every request's access decision about the stream is made from.
	Access Access
}

// IsFork reports whether the stream inherits a prefix from another stream.
func (m *Meta) IsFork() bool { return m.ForkSourceID != 0 }

// Expired reports whether the stream's TTL or Expires-At has passed at now.
func (m *Meta) Expired(now time.Time) bool {
	if m.ExpiresAt != nil && !now.Before(*m.ExpiresAt) {
		return true
	}
	if m.TTLSeconds != nil && !now.Before(m.LastAccessAt.Add(time.Duration(*m.TTLSeconds)*time.Second)) {
		return true
	}
	return false
}

// HasTTL reports whether accesses must refresh last_access_at.
func (m *Meta) HasTTL() bool { return m.TTLSeconds != nil }

// scanMeta reads the columns of the "meta" fragment (queries/meta.sql), in order.
func scanMeta(row pgx.Row) (*Meta, error) {
	m := &Meta{}
	var cpID *string
	var cpEpoch, cpSeq *int64
	err := row.Scan(&m.ID, &m.Path, &m.ContentType, &m.Tail.Seq, &m.Tail.Pos, &m.Closed,
		&cpID, &cpEpoch, &cpSeq, &m.LastStreamSeq,
		&m.TTLSeconds, &m.ExpiresAt, &m.LastAccessAt, &m.CreatedAt, &m.Refcount, &m.SoftDeleted,
		&m.ForkSourceID, &m.ForkSourcePath, &m.ForkSeq, &m.ForkPos, &m.ForkOffset, &m.ForkSubOffset,
		&m.Access.Kind, &m.Access.Owner, &m.Access.Entity)
	if err != nil {
		return nil, err
	}
	if cpID != nil && cpEpoch != nil && cpSeq != nil {
		m.ClosedBy = &ProducerTuple{ID: *cpID, Epoch: *cpEpoch, Seq: *cpSeq}
	}
	return m, nil
}
