// Package authz decides what a principal may do, as Electric Agents does: the creator
// of an entity may do everything to it; anyone else needs a grant of the permission on
// the entity (or, with propagation "descendants", on an ancestor), to them or to their
// kind, that has not expired. Entity types have spawn and manage grants; whoever
// registers a new type gets both. System principals (the server's own work, and the dev
// principal) and configured admin principals pass every check.
//
// The package owns the entity_grants and type_grants tables (migration 019).
package authz

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/streamdb"
)

// Permission is one of Electric's permissions.
type Permission string

const (
	Read     Permission = "read"
	Write    Permission = "write"
	Delete   Permission = "delete"
	Signal   Permission = "signal"
	Fork     Permission = "fork"
	Schedule Permission = "schedule"
	Spawn    Permission = "spawn"
	Manage   Permission = "manage"
)

var entityPermissions = map[Permission]bool{Read: true, Write: true, Delete: true, Signal: true, Fork: true,
	Schedule: true, Spawn: true, Manage: true}

var typePermissions = map[Permission]bool{Spawn: true, Manage: true}

// Grant is a permission given to a principal ("principal", value "kind:id") or to every
// principal of a kind ("principal_kind", value "user", "agent", "service" or "system").
type Grant struct {
	ID             string
	Target         string // the entity URL or the type name
	SubjectKind    string
	SubjectValue   string
	Permission     Permission
	Propagation    string // entity grants: "self" or "descendants"
	CopyToChildren bool   // entity grants
	ExpiresAt      *time.Time
	CreatedBy      string
	CreatedAt      time.Time
}

// Limits of what one grant request may carry.
const (
	maxSubjectBytes = 256
	// MaxGrantsPerTarget bounds the grants of one entity or type (409 beyond).
	MaxGrantsPerTarget = 256
)

// InvalidError is a grant request that cannot be stored; Path names the field.
type InvalidError struct{ Path, Message string }

func (e *InvalidError) Error() string { return e.Path + ": " + e.Message }

// ErrGrantNotFound is a grant id that does not exist on the target.
var ErrGrantNotFound = errors.New("authz: grant not found")

// ErrTooManyGrants is a target at MaxGrantsPerTarget.
var ErrTooManyGrants = errors.New("authz: too many grants")

// GrantRequest is what a client asks for.
type GrantRequest struct {
	SubjectKind    string     `json:"subject_kind"`
	SubjectValue   string     `json:"subject_value"`
	Permission     string     `json:"permission"`
	Propagation    string     `json:"propagation,omitempty"`
	CopyToChildren bool       `json:"copy_to_children,omitempty"`
	ExpiresAt      *time.Time `json:"expires_at,omitempty"`
}

// grantTarget is what a grant is on: each kind has its own permissions.
type grantTarget int

const (
	onEntity grantTarget = iota
	onType
	onStream
)

var targetPermissions = map[grantTarget]struct {
	perms map[Permission]bool
	names string
}{
	onEntity: {entityPermissions, "read, write, delete, signal, fork, schedule, spawn or manage"},
	onType:   {typePermissions, "spawn or manage"},
	onStream: {streamPermissions, "read, write, delete or manage"},
}

// check normalises g for a grant on target.
func (g *GrantRequest) check(target grantTarget, now time.Time) error {
	switch g.SubjectKind {
	case "principal":
		if len(g.SubjectValue) > maxSubjectBytes {
			return &InvalidError{"/subject_value", fmt.Sprintf("must be at most %d bytes", maxSubjectBytes)}
		}
		p, ok := principal.ParseAny(g.SubjectValue)
		if !ok {
			return &InvalidError{"/subject_value", "must be a principal: kind:id or /principal/<kind%3Aid>, kind user, agent, service or system"}
		}
		g.SubjectValue = p.String()
	case "principal_kind":
		switch g.SubjectValue {
		case "user", "agent", "service", "system":
		default:
			return &InvalidError{"/subject_value", "must be user, agent, service or system"}
		}
	default:
		return &InvalidError{"/subject_kind", "must be principal or principal_kind"}
	}
	tp := targetPermissions[target]
	if !tp.perms[Permission(g.Permission)] {
		return &InvalidError{"/permission", "must be " + tp.names}
	}
	if target == onEntity {
		switch g.Propagation {
		case "":
			g.Propagation = "self"
		case "self", "descendants":
		default:
			return &InvalidError{"/propagation", "must be self or descendants"}
		}
	} else if g.Propagation != "" || g.CopyToChildren {
		return &InvalidError{"/propagation", "only entity grants have propagation or copy_to_children"}
	}
	if g.ExpiresAt != nil && !g.ExpiresAt.After(now) {
		return &InvalidError{"/expires_at", "must be in the future"}
	}
	return nil
}

func newGrantID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "g_" + hex.EncodeToString(b[:])
}

// Store keeps grants.
type Store struct {
	db      streamdb.DB
	checker *Checker
}

// AddEntityGrant stores a grant on entity url, made by who.
func (s *Store) AddEntityGrant(ctx context.Context, url string, who principal.Principal, g GrantRequest) (*Grant, error) {
	if err := g.check(onEntity, time.Now()); err != nil {
		return nil, err
	}
	defer s.checker.changed()
	return s.insertEntityGrant(ctx, s.db, url, who, g)
}

type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Store) insertEntityGrant(ctx context.Context, q queryer, url string, who principal.Principal, g GrantRequest) (*Grant, error) {
	if n, err := s.count(ctx, q, sqlListEntityGrants, url); err != nil {
		return nil, err
	} else if n >= MaxGrantsPerTarget {
		return nil, ErrTooManyGrants
	}
	return scanEntityGrant(q.QueryRow(ctx, sqlInsertEntityGrant, newGrantID(), url, g.SubjectKind, g.SubjectValue,
		g.Permission, g.Propagation, g.CopyToChildren, g.ExpiresAt, who.String()))
}

func (s *Store) count(ctx context.Context, q queryer, sql, target string) (int, error) {
	rows, err := q.Query(ctx, sql, target)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

// EntityGrants lists the grants on entity url, expired ones included.
func (s *Store) EntityGrants(ctx context.Context, url string) ([]*Grant, error) {
	rows, err := s.db.Query(ctx, sqlListEntityGrants, url)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Grant, error) { return scanEntityGrant(r) })
}

// RevokeEntityGrant deletes grant id of entity url.
func (s *Store) RevokeEntityGrant(ctx context.Context, url, id string) error {
	defer s.checker.changed()
	tag, err := s.db.Exec(ctx, sqlDeleteEntityGrant, url, id)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrGrantNotFound
	}
	return err
}

// AddTypeGrant stores a grant on type name, made by who.
func (s *Store) AddTypeGrant(ctx context.Context, name string, who principal.Principal, g GrantRequest) (*Grant, error) {
	if err := g.check(onType, time.Now()); err != nil {
		return nil, err
	}
	defer s.checker.changed()
	if n, err := s.count(ctx, s.db, sqlListTypeGrants, name); err != nil {
		return nil, err
	} else if n >= MaxGrantsPerTarget {
		return nil, ErrTooManyGrants
	}
	return scanTypeGrant(s.db.QueryRow(ctx, sqlInsertTypeGrant, newGrantID(), name, g.SubjectKind, g.SubjectValue,
		g.Permission, g.ExpiresAt, who.String()))
}

// CheckTypeGrants checks the permission_grants of a registration before anything is
// stored (422 with the offending index).
func CheckTypeGrants(gs []GrantRequest) error {
	if len(gs) > MaxGrantsPerTarget {
		return &InvalidError{"/permission_grants", fmt.Sprintf("at most %d grants", MaxGrantsPerTarget)}
	}
	now := time.Now()
	for i := range gs {
		if err := gs[i].check(onType, now); err != nil {
			var ie *InvalidError
			if errors.As(err, &ie) {
				return &InvalidError{fmt.Sprintf("/permission_grants/%d%s", i, ie.Path), ie.Message}
			}
			return err
		}
	}
	return nil
}

// CheckEntityGrants checks the grants of a spawn before anything is stored.
func CheckEntityGrants(gs []GrantRequest) error {
	if len(gs) > MaxGrantsPerTarget {
		return &InvalidError{"/grants", fmt.Sprintf("at most %d grants", MaxGrantsPerTarget)}
	}
	now := time.Now()
	for i := range gs {
		if err := gs[i].check(onEntity, now); err != nil {
			var ie *InvalidError
			if errors.As(err, &ie) {
				return &InvalidError{fmt.Sprintf("/grants/%d%s", i, ie.Path), ie.Message}
			}
			return err
		}
	}
	return nil
}

// TypeRegistered gives whoever registered a new type spawn and manage on it, plus the
// registration's permission_grants (checked with CheckTypeGrants). Grants left over
// from a deleted type of the same name are dropped first: a name carries no rights.
func (s *Store) TypeRegistered(ctx context.Context, name string, who principal.Principal, isNew bool, gs []GrantRequest) error {
	defer s.checker.changed()
	if isNew {
		if _, err := s.db.Exec(ctx, sqlDropTypeGrants, name); err != nil {
			return err
		}
		if !who.IsSystem() {
			for _, perm := range []Permission{Spawn, Manage} {
				if _, err := s.db.Exec(ctx, sqlInsertTypeGrant, newGrantID(), name, "principal", who.String(), perm, nil, who.String()); err != nil {
					return err
				}
			}
		}
	}
	for _, g := range gs {
		if _, err := s.db.Exec(ctx, sqlInsertTypeGrant, newGrantID(), name, g.SubjectKind, g.SubjectValue, g.Permission,
			g.ExpiresAt, who.String()); err != nil {
			return err
		}
	}
	return nil
}

// TypeDeleted drops the grants of a deleted type.
func (s *Store) TypeDeleted(ctx context.Context, name string) error {
	defer s.checker.changed()
	_, err := s.db.Exec(ctx, sqlDropTypeGrants, name)
	return err
}

// TypeGrants lists the grants on type name.
func (s *Store) TypeGrants(ctx context.Context, name string) ([]*Grant, error) {
	rows, err := s.db.Query(ctx, sqlListTypeGrants, name)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Grant, error) { return scanTypeGrant(r) })
}

// RevokeTypeGrant deletes grant id of type name.
func (s *Store) RevokeTypeGrant(ctx context.Context, name, id string) error {
	defer s.checker.changed()
	tag, err := s.db.Exec(ctx, sqlDeleteTypeGrant, name, id)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrGrantNotFound
	}
	return err
}

type spawnGrantsKey struct{}

// WithSpawnGrants carries a spawn request's grants to the spawn hook.
func WithSpawnGrants(ctx context.Context, gs []GrantRequest) context.Context {
	return context.WithValue(ctx, spawnGrantsKey{}, gs)
}

// OnSpawn runs in the transaction that spawns entity url: it copies the parent's
// copy_to_children grants and stores the spawn's own grants (WithSpawnGrants).
func (s *Store) OnSpawn(ctx context.Context, tx *streamdb.Tx, url, parent, createdBy string) error {
	gs, _ := ctx.Value(spawnGrantsKey{}).([]GrantRequest)
	if parent == "" && len(gs) == 0 {
		return nil
	}
	defer s.checker.changed()
	if parent != "" {
		if _, err := tx.Exec(ctx, sqlCopyGrantsToChild, parent, url); err != nil {
			return err
		}
	}
	who, ok := principal.ParseAny(createdBy)
	if !ok {
		who = principal.Dev
	}
	for _, g := range gs {
		if _, err := s.insertEntityGrant(ctx, tx, url, who, g); err != nil {
			return err
		}
	}
	return nil
}

func scanEntityGrant(row pgx.Row) (*Grant, error) {
	g := &Grant{}
	var perm string
	err := row.Scan(&g.ID, &g.Target, &g.SubjectKind, &g.SubjectValue, &perm, &g.Propagation, &g.CopyToChildren,
		&g.ExpiresAt, &g.CreatedBy, &g.CreatedAt)
	g.Permission = Permission(perm)
	return g, err
}

func scanTypeGrant(row pgx.Row) (*Grant, error) {
	g := &Grant{}
	var perm string
	err := row.Scan(&g.ID, &g.Target, &g.SubjectKind, &g.SubjectValue, &perm, &g.ExpiresAt, &g.CreatedBy, &g.CreatedAt)
	g.Permission = Permission(perm)
	return g, err
}

// JSON is the grant as the API shows it.
func (g *Grant) JSON(forType bool) map[string]any {
	o := map[string]any{"id": g.ID, "subject_kind": g.SubjectKind, "subject_value": g.SubjectValue,
		"permission": string(g.Permission), "created_by": g.CreatedBy,
		"created_at": g.CreatedAt.UTC().Format(time.RFC3339Nano), "expires_at": nil}
	if g.ExpiresAt != nil {
		o["expires_at"] = g.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	if !forType {
		o["propagation"] = g.Propagation
		o["copy_to_children"] = g.CopyToChildren
	}
	return o
}
