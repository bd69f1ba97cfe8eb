package pgsync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wakereg"
	"github.com/entityd/entityd/wire"
)

// Bounds of an observation.
const (
	MaxColumns = 256
	// MaxURL bounds the Electric shape URL the runtime sends (kept, never fetched).
	MaxURL = 2048
)

// Observation is one pgSync registration, decoded by the API.
type Observation struct {
	Table Table
	// Columns, when set, are the only columns of the rows the events carry.
	Columns []string
	// Replica is "default" or "full" (old rows on updates and deletes when the table's
	// replica identity gives them).
	Replica string
	// Owner is the registering principal ("kind:id"): the only reader of the stream.
	Owner string
	// EntityURL is the observing entity the runtime names (metadata.entityUrl), part of
	// the observation's identity as in the reference; "" when not given. The API checks
	// that Owner may write it: the entity's readers may read the stream.
	EntityURL string
	// Options is the request's options object as sent, recorded with the source.
	Options json.RawMessage
}

// Errors of Register, for the API to answer.
var (
	// ErrDisabled: no table is observable on this server (--pg-sync-tables is empty).
	ErrDisabled = errors.New("pgSync observations are not enabled on this server: no table is observable (the operator sets --pg-sync-tables)")
	// ErrUnavailable: Postgres does not run with wal_level=logical.
	ErrUnavailable = errors.New("pgSync observations need Postgres with wal_level=logical; this server's database does not have it (see docs/DEPLOYING.md)")
	// ErrTooMany: the principal has MaxPerPrincipal observations.
	ErrTooMany = errors.New("pgsync: too many observations")
)

// NotObservableError: the table is not on the allow-list.
type NotObservableError struct{ Table string }

func (e *NotObservableError) Error() string {
	return "Table " + e.Table + " is not observable on this server (it is not on the operator's --pg-sync-tables list)"
}

// InvalidError: the observation cannot be served as asked (Field names the option).
type InvalidError struct{ Field, Message string }

func (e *InvalidError) Error() string { return e.Message }

// SourceRef is the observation's identity: what it observes, and for whom.
func (o *Observation) SourceRef() string {
	b, _ := json.Marshal(struct {
		Table   string   `json:"table"`
		Columns []string `json:"columns,omitempty"`
		Replica string   `json:"replica"`
		Owner   string   `json:"owner"`
		Entity  string   `json:"entityUrl,omitempty"`
	}{o.Table.Key(), o.Columns, o.Replica, o.Owner, o.EntityURL})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Register makes (or renews) the observation and returns its source ref and stream
// path. When it returns, every change of the table committed afterwards reaches the
// stream.
func (s *Service) Register(ctx context.Context, o *Observation) (ref, path string, err error) {
	if !s.Enabled() {
		return "", "", ErrDisabled
	}
	if _, ok := s.allowed[o.Table.Key()]; !ok {
		return "", "", &NotObservableError{Table: o.Table.Key()}
	}
	if o.Replica == "" {
		o.Replica = "default"
	}
	var level string
	if err := s.pool.QueryRow(ctx, sqlWalLevel).Scan(&level); err != nil {
		return "", "", err
	}
	if level != "logical" {
		return "", "", ErrUnavailable
	}
	if err := s.checkTable(ctx, o); err != nil {
		return "", "", err
	}
	ref = o.SourceRef()
	path = Prefix + ref
	var n int
	if err := s.pool.QueryRow(ctx, sqlCountSourcesBy, o.Owner, s.opts.MaxPerPrincipal).Scan(&n); err != nil {
		return "", "", err
	}
	if n >= s.opts.MaxPerPrincipal {
		if _, err := s.streams.Identify(ctx, path); err != nil { // a new one
			return "", "", ErrTooMany
		}
	}
	if err := s.publish(ctx, o.Table); err != nil {
		return "", "", err
	}
	_, _, err = s.streams.Create(ctx, path, streamdb.CreateConfig{ContentType: "application/json",
		Access: streamdb.Access{Kind: streamdb.AccessPgSync, Owner: o.Owner, Entity: o.EntityURL},
		CheckExisting: func(m *streamdb.Meta) error {
			if m.Access.Kind != streamdb.AccessPgSync || m.Access.Owner != o.Owner || m.Access.Entity != o.EntityURL {
				return errors.New("pgsync: another stream is at " + path)
			}
			return nil
		}}, nil)
	if err != nil {
		return "", "", err
	}
	var cols []string
	if o.Columns != nil {
		cols = o.Columns
	}
	var entityURL *string
	if o.EntityURL != "" {
		entityURL = &o.EntityURL
	}
	opts := o.Options
	if len(opts) == 0 {
		opts = json.RawMessage(`{}`)
	}
	if _, err := s.pool.Exec(ctx, sqlUpsertSource, ref, path, o.Table.Key(), cols, o.Replica, o.Owner, entityURL, string(opts)); err != nil {
		return "", "", err
	}
	// the source first, then the slot: a holder dropping an idle slot (under the same
	// lock) sees the source and keeps it, or drops it before this makes it again
	if err := s.ensureSlot(ctx); err != nil {
		return "", "", err
	}
	s.wake()
	return ref, path, nil
}

// checkTable checks that the table exists, that its updates and deletes can be
// replicated (adding a table without a replica identity to a publication would make
// its UPDATEs and DELETEs fail for the application), and that the columns exist.
func (s *Service) checkTable(ctx context.Context, o *Observation) error {
	var ident string
	var pk bool
	var cols []string
	err := s.pool.QueryRow(ctx, sqlTableInfo, o.Table.Schema, o.Table.Name).Scan(&ident, &pk, &cols)
	if errors.Is(err, pgx.ErrNoRows) {
		return &InvalidError{"table", "Table " + o.Table.Key() + " does not exist"}
	}
	if err != nil {
		return err
	}
	if ident == "n" || ident == "d" && !pk {
		return &InvalidError{"table", "Table " + o.Table.Key() + " has no primary key or replica identity, so its changes cannot be keyed"}
	}
	for _, c := range o.Columns {
		if !slices.Contains(cols, c) {
			return &InvalidError{"columns", fmt.Sprintf("Table %s has no column %q", o.Table.Key(), c)}
		}
	}
	return nil
}

// publish makes sure the table is in the publication (creating the publication with it
// the first time). The change commits before Register goes on, so the changes after
// the registration are decoded with the table in it.
func (s *Service) publish(ctx context.Context, t Table) error {
	s.mu.Lock()
	known := s.published[t.Key()]
	s.mu.Unlock()
	if known {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlLockPublication, s.opts.Publication); err != nil {
			return err
		}
		var exists, has bool
		if err := tx.QueryRow(ctx, sqlPublicationExists, s.opts.Publication).Scan(&exists); err != nil {
			return err
		}
		table := pgx.Identifier{t.Schema, t.Name}.Sanitize()
		pub := pgx.Identifier{s.opts.Publication}.Sanitize()
		if !exists {
			_, err := tx.Exec(ctx, "CREATE PUBLICATION "+pub+" FOR TABLE "+table)
			return err
		}
		if err := tx.QueryRow(ctx, sqlPublicationHasTable, s.opts.Publication, t.Schema, t.Name).Scan(&has); err != nil || has {
			return err
		}
		_, err := tx.Exec(ctx, "ALTER PUBLICATION "+pub+" ADD TABLE "+table)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgsync: publish %s (the server's role must own the table or be superuser): %w", t.Key(), err)
	}
	s.mu.Lock()
	s.published[t.Key()] = true
	s.mu.Unlock()
	return nil
}

// ManifestKey is the key of a pgSync observation in its entity's manifest.
func ManifestKey(ref string) string { return "source:pgSync:" + ref }

// Unobserve stops e observing the source ref: its manifest entry is deleted and the
// wakes it anchors with it, in one transaction; it returns the append's txid. The
// source itself stays while others may use it (it is dropped when nobody registers it
// for SourceIdle).
func (s *Service) Unobserve(ctx context.Context, e *entity.Entity, ref string) (string, error) {
	key := ManifestKey(ref)
	txid := uuid.NewString()
	err := s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		ev := wire.Event{Type: inbox.ManifestEventType, Key: key, Operation: wire.OpDelete, Txid: txid,
			Timestamp: time.Now().UTC()}.Marshal()
		var createdBy string
		if e.CreatedBy != nil {
			createdBy = *e.CreatedBy
		}
		_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Main(e.URL), Messages: [][]byte{ev},
			Also: wakereg.ManifestStatements(e.URL, createdBy, []wakereg.ManifestEntry{{Key: key}})})
		var closed *streamdb.ClosedError
		if errors.As(err, &closed) || errors.Is(err, streamdb.ErrGone) {
			return entity.ErrNotRunning // an ended entity's wakes went when it ended
		}
		return err
	})
	return txid, err
}

// CountBy is how many observations principal p has, counted up to limit.
func (s *Service) CountBy(ctx context.Context, p string, limit int) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, sqlCountSourcesBy, p, limit).Scan(&n)
	return n, err
}
