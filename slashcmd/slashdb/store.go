package slashdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/streamdb"
)

// applyLockClass is the first key of the transaction advisory lock that serializes the
// changes of one entity's commands (the second key is the hash of its URL).
const applyLockClass int32 = 0x736c7368 // "slsh"

// Errors of the materialization.
var (
	ErrEntityNotFound = errors.New("entity has no slash-command streams")
	ErrEntityClosed   = errors.New("entity's stream is closed")
)

// Service materializes slash-command changes: every change updates the slash_commands
// table and appends slash_command events to the entity's main stream and to its
// collection stream, all in one transaction.
type Service struct {
	streams *streamdb.Store
	limits  slashcmd.Limits
}

// NewService returns a Service enforcing limits on registrations.
func NewService(streams *streamdb.Store, limits slashcmd.Limits) *Service {
	if limits == (slashcmd.Limits{}) {
		limits = slashcmd.DefaultLimits
	}
	return &Service{streams: streams, limits: limits}
}

// Result is what an Apply wrote.
type Result struct {
	Changes []slashcmd.Change // only the ones that produced events
	// Txid stamps the events' headers.txid (empty when nothing was written), so a
	// client can wait for them on either stream.
	Txid string
	Rows []slashcmd.Row // the effective rows after the change, sorted by name
}

// Apply runs fn on the entity's command set in a new transaction and writes what changed.
func (s *Service) Apply(ctx context.Context, entityURL string, fn func(*slashcmd.Set) error) (*Result, error) {
	var res *Result
	err := s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		var err error
		res, err = s.ApplyTx(ctx, tx, entityURL, fn)
		return err
	})
	return res, err
}

// ApplyTx is Apply inside the caller's transaction (for callers that must commit the
// change together with their own writes).
func (s *Service) ApplyTx(ctx context.Context, tx *streamdb.Tx, entityURL string, fn func(*slashcmd.Set) error) (*Result, error) {
	// Row locks (load's FOR UPDATE) cannot cover names that have no row yet: two
	// registrations of a new name would both insert it, and the later upsert would drop
	// the earlier one's layer. Changes of one entity's commands therefore take turns.
	if _, err := tx.Exec(ctx, sqlLockEntityCommands, applyLockClass, entityURL); err != nil {
		return nil, fmt.Errorf("slashcmd: lock %s: %w", entityURL, err)
	}
	entries, err := load(ctx, tx, entityURL, true)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	set := slashcmd.NewSet(entries, s.limits, now)
	if err := fn(set); err != nil {
		return nil, err
	}
	res := &Result{Rows: set.List()}
	var events [][]byte
	txid := uuid.NewString()
	for _, c := range set.Changes() {
		if err := persist(ctx, tx, entityURL, c); err != nil {
			return nil, err
		}
		switch c.Op {
		case "insert", "update":
			events = append(events, c.Row.Event(c.Op, txid, now))
		case "delete":
			events = append(events, slashcmd.DeleteEvent(c.Name, txid, now))
		default:
			continue
		}
		res.Changes = append(res.Changes, c)
	}
	if len(events) == 0 {
		return res, nil
	}
	res.Txid = txid
	for _, path := range []string{entitypath.Main(entityURL), entitypath.Collection(entityURL)} {
		_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: path, Messages: events})
		var closed *streamdb.ClosedError
		switch {
		case errors.As(err, &closed):
			return nil, ErrEntityClosed
		case errors.Is(err, streamdb.ErrNotFound):
			return nil, ErrEntityNotFound
		case err != nil:
			return nil, err
		}
	}
	return res, nil
}

// List returns the entity's effective rows sorted by name.
func (s *Service) List(ctx context.Context, entityURL string) ([]slashcmd.Row, error) {
	var rows []slashcmd.Row
	err := s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		entries, err := load(ctx, tx, entityURL, false)
		if err != nil {
			return err
		}
		rows = slashcmd.NewSet(entries, s.limits, time.Now()).List()
		return nil
	})
	return rows, err
}

// For returns the Go API for one entity's commands (what a handler gets as
// ctx.SlashCommands): each call is its own transaction.
func (s *Service) For(entityURL string) *Commands { return &Commands{svc: s, url: entityURL} }

// Commands manages one entity's slash commands.
type Commands struct {
	svc *Service
	url string
}

// Get returns the effective command name.
func (c *Commands) Get(ctx context.Context, name string) (slashcmd.Row, bool, error) {
	rows, err := c.svc.List(ctx, c.url)
	if err != nil {
		return slashcmd.Row{}, false, err
	}
	for _, r := range rows {
		if r.Name == name {
			return r, true, nil
		}
	}
	return slashcmd.Row{}, false, nil
}

// List returns the effective commands sorted by name.
func (c *Commands) List(ctx context.Context) ([]slashcmd.Row, error) { return c.svc.List(ctx, c.url) }

// Register adds or replaces the owner's layer for the command and puts it on top.
func (c *Commands) Register(ctx context.Context, reg slashcmd.Registration) error {
	_, err := c.svc.Apply(ctx, c.url, func(s *slashcmd.Set) error { return s.Register(reg) })
	return err
}

// Unregister removes owner's layer for name ("" = the current top owner's).
func (c *Commands) Unregister(ctx context.Context, name, owner string) error {
	_, err := c.svc.Apply(ctx, c.url, func(s *slashcmd.Set) error { s.Unregister(name, owner); return nil })
	return err
}

// ReplaceOwned makes owner's registrations exactly regs, atomically.
func (c *Commands) ReplaceOwned(ctx context.Context, owner string, regs []slashcmd.Registration) error {
	_, err := c.svc.Apply(ctx, c.url, func(s *slashcmd.Set) error { return s.ReplaceOwned(owner, regs) })
	return err
}

func load(ctx context.Context, tx *streamdb.Tx, entityURL string, forUpdate bool) ([]*slashcmd.Entry, error) {
	return loadWith(ctx, tx, entityURL, forUpdate)
}

// querier is what load needs from a transaction (streamdb.Tx or a pgx.Tx).
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func loadWith(ctx context.Context, tx querier, entityURL string, forUpdate bool) ([]*slashcmd.Entry, error) {
	q := sqlSelectCommands
	if forUpdate {
		q = sqlLockCommands
	}
	rows, err := tx.Query(ctx, q, entityURL)
	if err != nil {
		return nil, fmt.Errorf("slashcmd: load: %w", err)
	}
	var out []*slashcmd.Entry
	byName := map[string]*slashcmd.Entry{}
	for rows.Next() {
		var (
			r        slashcmd.Row
			args, st []byte
			updated  time.Time
		)
		if err := rows.Scan(&r.Name, &r.Description, &args, &r.Source, &r.Owner, &r.Version, &updated, &st); err != nil {
			rows.Close()
			return nil, err
		}
		r.Key, r.UpdatedAt = r.Name, rawjson.ISOTime(updated)
		e := &slashcmd.Entry{Name: r.Name, Row: &r}
		if args != nil {
			if err := json.Unmarshal(args, &r.Arguments); err != nil {
				rows.Close()
				return nil, err
			}
		}
		if st != nil {
			e.Static = &slashcmd.Definition{}
			if err := json.Unmarshal(st, e.Static); err != nil {
				rows.Close()
				return nil, err
			}
		}
		out = append(out, e)
		byName[e.Name] = e
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := loadLayers(ctx, tx, entityURL, byName); err != nil {
		return nil, err
	}
	for _, e := range out {
		if len(e.Layers) > 0 {
			e.Row.DynamicLayers = slashcmd.PublicLayers(e.Layers)
		}
	}
	return out, nil
}

func persist(ctx context.Context, tx *streamdb.Tx, entityURL string, c slashcmd.Change) error {
	e := c.Entry
	if err := persistLayers(ctx, tx, entityURL, e); err != nil {
		return err
	}
	if e.Static == nil && len(e.Layers) == 0 {
		_, err := tx.Exec(ctx, sqlDeleteCommand, entityURL, e.Name)
		return err
	}
	r := c.Row
	if r == nil {
		r = e.Effective(time.Now(), e.Row)
	}
	var args, static []byte
	var err error
	if r.Arguments != nil {
		if args, err = json.Marshal(r.Arguments); err != nil {
			return err
		}
	}
	if e.Static != nil {
		if static, err = slashcmd.StaticJSON(*e.Static); err != nil {
			return err
		}
	}
	updated, err := time.Parse(time.RFC3339Nano, r.UpdatedAt)
	if err != nil {
		return fmt.Errorf("slashcmd: updated_at %q: %w", r.UpdatedAt, err)
	}
	_, err = tx.Exec(ctx, sqlUpsertCommand,
		entityURL, e.Name, r.Description, args, r.Source, r.Owner, r.Version, updated, static)
	return err
}

// Load returns the entity's command entries as stored, for callers that apply changes in
// memory first (the runtime's ctx.SlashCommands) and replay them at commit.
func (s *Service) Load(ctx context.Context, entityURL string) ([]*slashcmd.Entry, error) {
	var entries []*slashcmd.Entry
	err := s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		var err error
		entries, err = load(ctx, tx, entityURL, false)
		return err
	})
	return entries, err
}

// Limits are the limits the service enforces.
func (s *Service) Limits() slashcmd.Limits { return s.limits }
