// Package membership serves tag observations (the runtime's observe(entities({tags}))):
// a stream /_entities/<ref> per (tags, principal) whose "members" events follow the
// entities that carry the tags and that the principal may read, as they are spawned,
// tagged, change status or end. Each stream is the server's (access kind members): only
// the principal it was made for reads it, so it never shows an entity to a principal
// that may not read it.
package membership

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// Bounds.
const (
	// MaxMembers bounds the entities one observation shows.
	MaxMembers = 10_000
	// maxObservations bounds the observations one process keeps current.
	maxObservations = 100_000
	// Resync is how often every observation is checked in full: it catches what no
	// commit of this process announced (a grant, a status change written by another
	// process, a notification lost with the listener connection).
	Resync = 30 * time.Second
)

// MembersType is the State Protocol type of a membership stream's events.
const MembersType = "members"

// Service keeps tag observations current.
type Service struct {
	streams  *streamdb.Store
	registry *entity.Registry
	checker  *authz.Checker
	log      *zap.Logger

	mu    sync.Mutex
	dirty map[string]bool // entity URLs changed by this process's commits
	full  bool            // resync everything (changes may have been missed)
	poke  chan struct{}
}

// New returns the service; it listens to the store's commits at once.
func New(streams *streamdb.Store, registry *entity.Registry, checker *authz.Checker, log *zap.Logger) *Service {
	s := &Service{streams: streams, registry: registry, checker: checker, log: log,
		dirty: map[string]bool{}, poke: make(chan struct{}, 1)}
	streams.OnCommit(s.observe)
	return s
}

// observe notes the entities whose streams this process committed to (another process
// syncs its own commits).
func (s *Service) observe(changes []streamdb.Change) {
	s.mu.Lock()
	if changes == nil {
		s.full = true
	}
	for _, c := range changes {
		if !c.Local {
			continue
		}
		if url, ok := entitypath.OfMain(c.Path); ok {
			s.dirty[url] = true
		}
	}
	n := len(s.dirty)
	full := s.full
	s.mu.Unlock()
	if n > 0 || full {
		select {
		case s.poke <- struct{}{}:
		default:
		}
	}
}

// Ensure makes (or finds) the observation of tags for p and brings its stream up to date
// before returning its source ref and stream path.
func (s *Service) Ensure(ctx context.Context, p principal.Principal, tags map[string]string) (ref, path string, err error) {
	if tags == nil {
		tags = map[string]string{}
	}
	ref = SourceRef(tags, p.Kind, p.URL())
	path = Prefix + ref
	_, _, err = s.streams.Create(ctx, path, streamdb.CreateConfig{ContentType: "application/json",
		Access: streamdb.Access{Kind: streamdb.AccessMembers, Owner: p.String()},
		CheckExisting: func(m *streamdb.Meta) error {
			if m.Access.Kind != streamdb.AccessMembers || m.Access.Owner != p.String() {
				return errors.New("membership: another stream is at " + path)
			}
			return nil
		}}, nil)
	if err != nil {
		return "", "", err
	}
	if _, err := s.streams.DB().Exec(ctx, sqlUpsertObservation, ref, path, stringify(tags), p.String()); err != nil {
		return "", "", err
	}
	return ref, path, s.syncAll(ctx, ref)
}

// CountBy is how many observations were made for principal p, counted up to limit.
func (s *Service) CountBy(ctx context.Context, p string, limit int) (int, error) {
	var n int
	err := s.streams.DB().QueryRow(ctx, sqlCountObservationsOf, p, limit).Scan(&n)
	return n, err
}

// Run keeps observations current until ctx ends: the entities this process changed as
// soon as it commits, everything every Resync of the store's clock.
func (s *Service) Run(ctx context.Context) {
	clk := s.streams.Clock()
	resync := clk.Now().Add(Resync) // the rounds' ticks come at or after these times
	round := func(ctx context.Context) {
		s.mu.Lock()
		if now := clk.Now(); !now.Before(resync) {
			s.full = true
			for !resync.After(now) {
				resync = resync.Add(Resync)
			}
		}
		dirty, all := s.dirty, s.full
		s.dirty, s.full = map[string]bool{}, false
		s.mu.Unlock()
		if err := s.pass(ctx, dirty, all); err != nil && ctx.Err() == nil {
			s.log.Warn("keeping tag observations current failed; retrying at the next resync", zap.Error(err))
		}
	}
	(&lifecycle.Every{Interval: Resync, Clock: clk, Wake: s.poke, Run: round}).Until(ctx)
}

func (s *Service) pass(ctx context.Context, dirty map[string]bool, all bool) error {
	if all {
		rows, err := s.streams.DB().Query(ctx, sqlListObservations, maxObservations)
		if err != nil {
			return err
		}
		refs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, ref := range refs {
			if err := s.syncAll(ctx, ref); err != nil {
				return err
			}
		}
		return nil
	}
	for url := range dirty {
		if err := s.syncEntity(ctx, url); err != nil {
			return err
		}
	}
	return nil
}

// syncEntity brings every observation the entity at url is or was a member of up to
// date for it.
func (s *Service) syncEntity(ctx context.Context, url string) error {
	e, err := s.registry.Get(ctx, url)
	if errors.Is(err, entity.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	tags, _ := json.Marshal(orEmpty(e.Tags))
	// the observations it matches now; one it left (a tag removed) is found by the
	// member rows it has
	rows, err := s.streams.DB().Query(ctx, sqlObservationsOf, string(tags), maxObservations)
	if err != nil {
		return err
	}
	refs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	former, err := s.formerObservations(ctx, url)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, ref := range append(refs, former...) {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		if err := s.sync(ctx, ref, []*entity.Entity{e}, false); err != nil {
			return err
		}
	}
	return nil
}

// syncAll brings one observation up to date with every entity.
func (s *Service) syncAll(ctx context.Context, ref string) error {
	var tagsText string
	if err := s.streams.DB().QueryRow(ctx, sqlObservationTags, ref).Scan(&tagsText); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	}
	var tags map[string]string
	if err := json.Unmarshal([]byte(tagsText), &tags); err != nil {
		return err
	}
	es, err := s.registry.List(ctx, entity.Filter{Tags: tags, Limit: MaxMembers})
	if err != nil {
		return err
	}
	return s.sync(ctx, ref, es, true)
}

// sync writes what changed for the candidates es to observation ref's stream, under the
// observation's row lock (so two processes never write the same change twice). With
// full, members not among es leave.
func (s *Service) sync(ctx context.Context, ref string, es []*entity.Entity, full bool) error {
	return s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		var path, tagsText, owner string
		err := tx.QueryRow(ctx, sqlLockObservation, ref).Scan(&path, &tagsText, &owner)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		var tags map[string]string
		if err := json.Unmarshal([]byte(tagsText), &tags); err != nil {
			return err
		}
		p, ok := principal.Parse(owner)
		if !ok {
			return nil
		}
		current := map[string]string{}
		if full {
			rows, err := tx.Query(ctx, sqlMembersOf, ref)
			if err != nil {
				return err
			}
			for rows.Next() {
				var url, member string
				if err := rows.Scan(&url, &member); err != nil {
					rows.Close()
					return err
				}
				current[url] = member
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		} else {
			for _, e := range es {
				var member string
				err := tx.QueryRow(ctx, sqlMemberOf, ref, e.URL).Scan(&member)
				if err == nil {
					current[e.URL] = member
				} else if !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
			}
		}
		now := time.Now().UTC()
		var events [][]byte
		wanted := map[string]bool{}
		for _, e := range es {
			match := carries(e.Tags, tags)
			if match {
				if match, err = s.checker.Entity(ctx, p, e, authz.Read); err != nil {
					return err
				}
			}
			old, was := current[e.URL]
			if !match {
				if was {
					events = append(events, wire.Event{Type: MembersType, Key: e.URL, OldValue: []byte(old),
						Operation: wire.OpDelete, Timestamp: now}.Marshal())
					if _, err := tx.Exec(ctx, sqlDeleteMember, ref, e.URL); err != nil {
						return err
					}
				}
				continue
			}
			wanted[e.URL] = true
			row := string(memberRow(e))
			if was && row == old {
				continue
			}
			op := wire.OpInsert
			if was {
				op = wire.OpUpdate
			}
			events = append(events, wire.Event{Type: MembersType, Key: e.URL, Value: []byte(row), Operation: op, Timestamp: now}.Marshal())
			if _, err := tx.Exec(ctx, sqlUpsertMember, ref, e.URL, row); err != nil {
				return err
			}
		}
		if full {
			for url, old := range current {
				if wanted[url] {
					continue
				}
				// no longer carries the tags, or is gone
				events = append(events, wire.Event{Type: MembersType, Key: url, OldValue: []byte(old),
					Operation: wire.OpDelete, Timestamp: now}.Marshal())
				if _, err := tx.Exec(ctx, sqlDeleteMember, ref, url); err != nil {
					return err
				}
			}
		}
		if len(events) == 0 {
			return nil
		}
		_, err = tx.Append(ctx, &streamdb.AppendRequest{Path: path, Messages: events})
		return err
	})
}

// memberRow is the runtime's EntityMembershipRow of e.
func memberRow(e *entity.Entity) []byte {
	var o rawjson.Object
	o.String("url", e.URL).String("type", e.Type).String("status", string(e.Status)).Value("tags", orEmpty(e.Tags))
	if len(e.SpawnArgs) > 0 && string(e.SpawnArgs) != "null" {
		o.Raw("spawn_args", e.SpawnArgs)
	} else {
		o.Raw("spawn_args", []byte("{}"))
	}
	if e.Parent != nil {
		o.String("parent", *e.Parent)
	} else {
		o.Null("parent")
	}
	o.Int("type_revision", int64(e.TypeRevision))
	rawOrNull(&o, "inbox_schemas", e.InboxSchemas)
	rawOrNull(&o, "state_schemas", e.StateSchemas)
	o.Int("created_at", e.CreatedAt.UnixMilli()).Int("updated_at", e.UpdatedAt.UnixMilli())
	return o.Bytes()
}

func rawOrNull(o *rawjson.Object, k string, v json.RawMessage) {
	if len(v) == 0 {
		o.Null(k)
		return
	}
	o.Raw(k, v)
}

func carries(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// formerObservations are the observations the entity at url is a member of.
func (s *Service) formerObservations(ctx context.Context, url string) ([]string, error) {
	rows, err := s.streams.DB().Query(ctx, sqlFormerObservations, url, maxObservations)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
