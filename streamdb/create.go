package streamdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// createLockClass is the first key of the transaction advisory lock that serializes
// creates of one path (the second key is the hash of the path).
const createLockClass int32 = 0x73747264 // "strd"

// CreateConfig is the configuration of a new stream (the headers of a PUT).
type CreateConfig struct {
	// ContentType defaults to DefaultContentType, or to the fork source's.
	ContentType string
	TTLSeconds  *int64
	ExpiresAt   *time.Time
	// Closed creates the stream closed (after its initial messages).
	Closed bool

	// ForkFrom names the source stream of a fork. ForkOffset (default: the source's tail)
	// and ForkSubOffset (bytes of the next binary message, or further JSON messages, past
	// ForkOffset) choose where the fork leaves its source.
	ForkFrom      string
	ForkOffset    *Offset
	ForkSubOffset int64

	// Access is recorded with the stream (the zero value: a plain stream of the server's).
	Access Access
	// CheckExisting, when set, judges a live stream already at the path before the
	// create is answered from it (the caller's access decision, under the path's lock);
	// its error is returned as it is.
	CheckExisting func(existing *Meta) error
	// CheckForkSource, when set, judges the fork source under its row lock; its error is
	// returned as it is.
	CheckForkSource func(src *Meta) error
	// CheckNew, when set, is asked before a new stream is inserted (a quota); its error
	// is returned as it is.
	CheckNew func() error
}

// Create creates the stream at path with initial messages. It returns the stream and
// whether it was created; an existing stream with the same configuration is returned
// with created=false (the protocol's idempotent PUT), and ErrExists otherwise.
func (s *Store) Create(ctx context.Context, path string, cfg CreateConfig, initial [][]byte) (m *Meta, created bool, err error) {
	err = s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		m, created, err = tx.Create(ctx, path, cfg, initial)
		return err
	})
	return m, created, err
}

// Create creates a stream inside the transaction; see Store.Create.
func (t *Tx) Create(ctx context.Context, path string, cfg CreateConfig, initial [][]byte) (*Meta, bool, error) {
	now := t.store.clock.Now()
	if cfg.ExpiresAt != nil {
		// Postgres keeps microseconds (pgx truncates): compare with what gets stored, so
		// that repeating a create with a nanosecond Expires-At is still the same config.
		exp := cfg.ExpiresAt.Truncate(time.Microsecond)
		cfg.ExpiresAt = &exp
	}
	// Serialize creates of one path: without it two concurrent creates both find no row
	// and the second fails on the unique path instead of finding the first's stream.
	if err := queries.LockPath(ctx, t, dbsqlc.LockPathParams{LockClass: createLockClass, Path: path}); err != nil {
		return nil, false, fmt.Errorf("streamdb: lock path: %w", err)
	}
	existing, err := t.lockByPath(ctx, path)
	if err != nil {
		return nil, false, err
	}
	if existing != nil {
		switch {
		case existing.SoftDeleted:
			return nil, false, ErrExists
		case existing.Expired(now) && existing.Refcount > 0:
			return nil, false, ErrExists
		case existing.Expired(now):
			if err := t.hardDelete(ctx, existing); err != nil {
				return nil, false, err
			}
		default:
			if cfg.CheckExisting != nil {
				if err := cfg.CheckExisting(existing); err != nil {
					return nil, false, err
				}
			}
			if sameConfig(existing, cfg) {
				return existing, false, nil
			}
			return nil, false, ErrExists
		}
	}

	if cfg.CheckNew != nil {
		if err := cfg.CheckNew(); err != nil {
			return nil, false, err
		}
	}
	m := &Meta{Path: path, ContentType: cfg.ContentType, TTLSeconds: cfg.TTLSeconds, ExpiresAt: cfg.ExpiresAt, Access: cfg.Access}
	m.Access.Kind = cfg.Access.kind()
	var prefix [][]byte // messages a sub-offset fork materializes from its source
	if cfg.ForkFrom != "" {
		if prefix, err = t.planFork(ctx, m, cfg, now); err != nil {
			return nil, false, err
		}
	}
	if m.ContentType == "" {
		m.ContentType = DefaultContentType
	}
	var forkSource *int64
	if m.ForkSourceID != 0 {
		forkSource = &m.ForkSourceID
	}
	m.Tail = Offset{Seq: m.ForkSeq, Pos: m.ForkPos}
	row, err := queries.InsertStream(ctx, t, dbsqlc.InsertStreamParams{
		Path: path, ContentType: m.ContentType, TailSeq: m.Tail.Seq, TailPos: m.Tail.Pos,
		TTLSeconds: m.TTLSeconds, ExpiresAt: m.ExpiresAt,
		ForkSourceID: forkSource, ForkSeq: m.ForkSeq, ForkPos: m.ForkPos,
		ForkOffset: m.ForkOffset, ForkSubOffset: m.ForkSubOffset,
		AccessKind: string(m.Access.Kind), OwnerPrincipal: m.Access.Owner, EntityURL: m.Access.Entity,
		Now: t.store.clock.SQL(),
	})
	if err != nil {
		return nil, false, fmt.Errorf("streamdb: create stream: %w", err)
	}
	m.ID, m.LastAccessAt, m.CreatedAt = row.ID, row.LastAccessAt, row.CreatedAt
	msgs := append(prefix, initial...)
	if len(msgs) > 0 || cfg.Closed {
		res, err := t.Append(ctx, &AppendRequest{Path: path, Messages: msgs, Close: cfg.Closed, creating: true})
		if err != nil {
			return nil, false, err
		}
		m.Tail, m.Closed = res.Tail, res.Closed
	}
	return m, true, nil
}

// planFork resolves the fork point of m in its source and returns the messages the fork
// must store itself: the head of a binary message cut by a sub-offset.
func (t *Tx) planFork(ctx context.Context, m *Meta, cfg CreateConfig, now time.Time) ([][]byte, error) {
	src, err := t.lockByPath(ctx, cfg.ForkFrom)
	if err != nil {
		return nil, err
	}
	if src == nil || (src.Expired(now) && src.Refcount == 0) {
		return nil, ErrForkSourceMissing
	}
	if cfg.CheckForkSource != nil {
		if err := cfg.CheckForkSource(src); err != nil {
			return nil, err
		}
	}
	if src.SoftDeleted || src.Expired(now) {
		return nil, ErrForkSourceGone
	}
	if m.ContentType != "" && !SameContentType(m.ContentType, src.ContentType) {
		return nil, ErrContentType
	}
	m.ContentType = src.ContentType
	if m.TTLSeconds == nil && m.ExpiresAt == nil {
		m.TTLSeconds, m.ExpiresAt = src.TTLSeconds, src.ExpiresAt
	}
	at := src.Tail
	if cfg.ForkOffset != nil {
		raw := cfg.ForkOffset.String()
		m.ForkOffset = &raw
		if cfg.ForkOffset.Seq > src.Tail.Seq {
			return nil, ErrForkOffset
		}
		if at, err = t.offsetAt(ctx, src, cfg.ForkOffset.Seq); err != nil {
			return nil, err
		}
	}
	m.ForkSourceID, m.ForkSourcePath = src.ID, src.Path
	m.ForkSeq, m.ForkPos = at.Seq, at.Pos

	var prefix [][]byte
	if cfg.ForkSubOffset > 0 {
		sub := cfg.ForkSubOffset
		m.ForkSubOffset = &sub
		if IsJSON(src.ContentType) {
			if at.Seq+sub > src.Tail.Seq {
				return nil, ErrForkSubOffset
			}
			if at, err = t.offsetAt(ctx, src, at.Seq+sub); err != nil {
				return nil, err
			}
			m.ForkSeq, m.ForkPos = at.Seq, at.Pos
		} else {
			next, err := t.messageAt(ctx, src, at.Seq+1)
			if err != nil {
				return nil, err
			}
			if next == nil || sub > int64(len(next)) {
				return nil, ErrForkSubOffset
			}
			prefix = [][]byte{next[:sub]}
		}
	}
	if err := queries.RefFork(ctx, t, src.ID); err != nil {
		return nil, err
	}
	return prefix, nil
}

// offsetAt returns the offset after message seq of m (following m's fork chain).
func (t *Tx) offsetAt(ctx context.Context, m *Meta, seq int64) (Offset, error) {
	for {
		if seq == 0 {
			return Start, nil
		}
		if seq == m.ForkSeq {
			return Offset{Seq: m.ForkSeq, Pos: m.ForkPos}, nil
		}
		if !m.IsFork() || seq > m.ForkSeq {
			pos, err := queries.OffsetAt(ctx, t, dbsqlc.OffsetAtParams{StreamID: m.ID, Seq: seq})
			if err != nil {
				return Offset{}, fmt.Errorf("streamdb: offset of message %d: %w", seq, err)
			}
			return Offset{Seq: seq, Pos: pos}, nil
		}
		src, err := t.metaByID(ctx, m.ForkSourceID)
		if err != nil {
			return Offset{}, err
		}
		m = src
	}
}

// messageAt returns the data of message seq of m (following m's fork chain), or nil.
func (t *Tx) messageAt(ctx context.Context, m *Meta, seq int64) ([]byte, error) {
	for m.IsFork() && seq <= m.ForkSeq {
		src, err := t.metaByID(ctx, m.ForkSourceID)
		if err != nil {
			return nil, err
		}
		m = src
	}
	data, err := queries.MessageAt(ctx, t, dbsqlc.MessageAtParams{StreamID: m.ID, Seq: seq})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return data, err
}

func (t *Tx) lockByPath(ctx context.Context, path string) (*Meta, error) {
	row, err := queries.LockStream(ctx, t, path)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("streamdb: lock stream: %w", err)
	}
	return metaOf(row.Stream, row.ForkSourcePath), nil
}

func (t *Tx) metaByID(ctx context.Context, id int64) (*Meta, error) {
	row, err := queries.MetaByID(ctx, t, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return metaOf(row.Stream, row.ForkSourcePath), nil
}

// sameConfig decides whether a PUT on an existing stream is an idempotent re-create.
func sameConfig(m *Meta, cfg CreateConfig) bool {
	if cfg.ContentType != "" || !m.IsFork() {
		ct := cfg.ContentType
		if ct == "" {
			ct = DefaultContentType
		}
		if !SameContentType(ct, m.ContentType) {
			return false
		}
	}
	// A fork that did not ask for an expiry inherited its source's; asking again without
	// one is the same request.
	inherited := m.IsFork() && cfg.TTLSeconds == nil && cfg.ExpiresAt == nil
	if !inherited {
		if !equalPtr(cfg.TTLSeconds, m.TTLSeconds) {
			return false
		}
		if (cfg.ExpiresAt == nil) != (m.ExpiresAt == nil) || (cfg.ExpiresAt != nil && !cfg.ExpiresAt.Equal(*m.ExpiresAt)) {
			return false
		}
	}
	if cfg.Closed != m.Closed {
		return false
	}
	if cfg.ForkFrom != m.ForkSourcePath {
		return false
	}
	if cfg.ForkFrom != "" {
		var want *string
		if cfg.ForkOffset != nil {
			s := cfg.ForkOffset.String()
			want = &s
		}
		if !equalPtr(want, m.ForkOffset) {
			return false
		}
		var have int64
		if m.ForkSubOffset != nil {
			have = *m.ForkSubOffset
		}
		if have != cfg.ForkSubOffset {
			return false
		}
	}
	return true
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// OffsetAfter returns the offset just after message seq of stream id (following its fork
// chain): the offset a State Protocol reader sees stamped on that message.
func (t *Tx) OffsetAfter(ctx context.Context, id, seq int64) (Offset, error) {
	m, err := t.metaByID(ctx, id)
	if err != nil {
		return Offset{}, err
	}
	return t.offsetAt(ctx, m, seq)
}
