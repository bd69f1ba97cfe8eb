package authz

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/streamdb"
)

// Shared state (/_electric/shared-state/<id>, the runtime's ctx.mkdb and db()
// observations) belongs to the entities linked to it, as in Electric Agents: a principal
// may read (or write) it when it may read (or write) one of those entities. The first
// link is made by the PUT or POST that names its owner entity in electric-owner-entity;
// a later request naming another entity links that one too. Unlike the reference, a link
// is only made for an entity the caller may write, so nobody can hand a shared state to
// an entity (and to that entity's readers) without write on it.

// MaxSharedStateLinks bounds the entities one shared state is linked to.
const MaxSharedStateLinks = 1000

// ErrTooManyLinks: the shared state is linked to MaxSharedStateLinks entities already.
var ErrTooManyLinks = errors.New("authz: the shared state is linked to too many entities")

// SharedState reports whether p has perm (read or write) on the shared-state stream id
// through one of its linked entities; owner, when not "", is the entity the request
// names in electric-owner-entity, which counts when p may write it (the link the request
// will make). Privileged principals pass.
func (c *Checker) SharedState(ctx context.Context, p principal.Principal, id streamdb.Identity, perm Permission, owner string) (bool, error) {
	if c.Privileged(p) {
		return true, nil
	}
	if owner != "" {
		ok, err := c.entityURL(ctx, p, owner, Write)
		if ok || err != nil {
			return ok, err
		}
	}
	if id.ID == 0 {
		return false, nil
	}
	links, err := c.sharedStateLinks(ctx, c.db, id.ID)
	if err != nil {
		return false, err
	}
	for _, url := range links {
		ok, err := c.entityURL(ctx, p, url, perm)
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// entityURL is Entity for an entity named by URL; a missing entity gives nothing.
func (c *Checker) entityURL(ctx context.Context, p principal.Principal, url string, perm Permission) (bool, error) {
	e, err := c.entities.Known(ctx, url)
	if errors.Is(err, entity.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return c.Entity(ctx, p, e, perm)
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

type execQuerier interface {
	querier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func (c *Checker) sharedStateLinks(ctx context.Context, q querier, streamID int64) ([]string, error) {
	rows, err := q.Query(ctx, sqlSharedStateLinks, streamID, MaxSharedStateLinks)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// LinkSharedState links the shared-state stream streamID to the entity at url (made by
// who), before the request the link authorised is answered. tx is nil or the
// transaction that creates the stream.
func (s *Store) LinkSharedState(ctx context.Context, tx *streamdb.Tx, streamID int64, url string, who principal.Principal) error {
	var q execQuerier = s.db
	if tx != nil {
		q = tx
	}
	links, err := s.checker.sharedStateLinks(ctx, q, streamID)
	if err != nil {
		return err
	}
	for _, l := range links {
		if l == url {
			return nil
		}
	}
	if len(links) >= MaxSharedStateLinks {
		return ErrTooManyLinks
	}
	_, err = q.Exec(ctx, sqlLinkSharedState, streamID, url, who.String())
	return err
}
