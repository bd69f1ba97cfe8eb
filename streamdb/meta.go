package streamdb

import (
	"time"

	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
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

// metaOf is the Meta of a stream's row, with the path of its fork source ("" when it
// is not a fork): what the queries that select sqlc.embed(s) return.
func metaOf(s dbsqlc.Stream, forkSourcePath string) *Meta {
	m := &Meta{
		ID:             s.ID,
		Path:           s.Path,
		ContentType:    s.ContentType,
		Tail:           Offset{Seq: s.TailSeq, Pos: s.TailPos},
		Closed:         s.Closed,
		LastStreamSeq:  s.LastStreamSeq,
		TTLSeconds:     s.TTLSeconds,
		ExpiresAt:      s.ExpiresAt,
		LastAccessAt:   s.LastAccessAt,
		CreatedAt:      s.CreatedAt,
		Refcount:       int(s.Refcount),
		SoftDeleted:    s.SoftDeleted,
		ForkSourcePath: forkSourcePath,
		ForkSeq:        s.ForkSeq,
		ForkPos:        s.ForkPos,
		ForkOffset:     s.ForkOffset,
		ForkSubOffset:  s.ForkSubOffset,
		Access:         Access{Kind: AccessKind(s.AccessKind), Owner: deref(s.OwnerPrincipal), Entity: deref(s.EntityURL)},
	}
	if s.ForkSourceID != nil {
		m.ForkSourceID = *s.ForkSourceID
	}
	if s.ClosedProducerID != nil && s.ClosedProducerEpoch != nil && s.ClosedProducerSeq != nil {
		m.ClosedBy = &ProducerTuple{ID: *s.ClosedProducerID, Epoch: *s.ClosedProducerEpoch, Seq: *s.ClosedProducerSeq}
	}
	return m
}

// deref is *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
