package authz

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/streamdb"
)

// Grants on plain streams. A plain stream belongs to the principal that created it,
// which may do everything to it; a grant shares one permission with a principal or a
// kind: read (catch-up, live reads, HEAD, forking it), write (append, close), delete,
// or manage (its grants). Grants name the stream by id, so a stream created again at
// the same path starts with none.

var streamPermissions = map[Permission]bool{Read: true, Write: true, Delete: true, Manage: true}

// AddStreamGrant stores a grant on stream id, made by who.
func (s *Store) AddStreamGrant(ctx context.Context, streamID int64, who principal.Principal, g GrantRequest) (*Grant, error) {
	if err := g.check(onStream, time.Now()); err != nil {
		return nil, err
	}
	defer s.checker.changed()
	if n, err := s.countID(ctx, sqlListStreamGrants, streamID); err != nil {
		return nil, err
	} else if n >= MaxGrantsPerTarget {
		return nil, ErrTooManyGrants
	}
	return scanStreamGrant(s.db.QueryRow(ctx, sqlInsertStreamGrant, newGrantID(), streamID, g.SubjectKind, g.SubjectValue,
		g.Permission, g.ExpiresAt, who.String()))
}

func (s *Store) countID(ctx context.Context, sql string, id int64) (int, error) {
	rows, err := s.db.Query(ctx, sql, id)
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

// StreamGrants lists the grants on stream id, expired ones included.
func (s *Store) StreamGrants(ctx context.Context, streamID int64) ([]*Grant, error) {
	rows, err := s.db.Query(ctx, sqlListStreamGrants, streamID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Grant, error) { return scanStreamGrant(r) })
}

// RevokeStreamGrant deletes grant id of stream streamID.
func (s *Store) RevokeStreamGrant(ctx context.Context, streamID int64, id string) error {
	defer s.checker.changed()
	tag, err := s.db.Exec(ctx, sqlDeleteStreamGrant, streamID, id)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrGrantNotFound
	}
	return err
}

func scanStreamGrant(row pgx.Row) (*Grant, error) {
	g := &Grant{}
	var perm string
	err := row.Scan(&g.ID, &g.Target, &g.SubjectKind, &g.SubjectValue, &perm, &g.ExpiresAt, &g.CreatedBy, &g.CreatedAt)
	g.Permission = Permission(perm)
	return g, err
}

// Stream reports whether p has perm on the plain stream a: its owner and privileged
// principals have every permission, others need a live grant. A stream without a
// recorded owner (the server's, or one created before owners were recorded) is for
// privileged principals only.
func (c *Checker) Stream(ctx context.Context, p principal.Principal, id streamdb.Identity, perm Permission) (bool, error) {
	if c.Privileged(p) || (id.Access.Owner != "" && id.Access.Owner == p.String()) {
		return true, nil
	}
	k := cacheKey{who: p.String(), target: "stream:" + strconv.FormatInt(id.ID, 10), perm: perm}
	ok, hit, gen := c.lookup(k)
	if hit {
		return ok, nil
	}
	if err := c.db.QueryRow(ctx, sqlStreamGranted, id.ID, p.String(), p.Kind, string(perm)).Scan(&ok); err != nil {
		return false, err
	}
	c.store(k, ok, gen)
	return ok, nil
}

// CountGrantsBy is how many grants p made (entity, type and stream grants), counted up
// to limit (for quotas).
func (s *Store) CountGrantsBy(ctx context.Context, p string, limit int) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, sqlCountGrantsBy, p, limit).Scan(&n)
	return n, err
}
