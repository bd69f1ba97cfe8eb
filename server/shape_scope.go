package server

import (
	"context"

	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/principal"
)

// rowFilter is what shapes.Options.Scope returns: the visible keys among a response's.
type rowFilter = func(ctx context.Context, pks []string) (map[string]bool, error)

// shapeScope forces the row scoping of §1.6 on shapes: entities the caller may read,
// entity types it may spawn. The caller is the principal the api authenticated. A
// response's entities are loaded in one query, not one per row (a snapshot page is
// 10,000 rows).
func shapeScope(checker *authz.Checker, registry *entity.Registry) func(context.Context, string) (rowFilter, error) {
	all := func(_ context.Context, pks []string) (map[string]bool, error) { return allOf(pks, true), nil }
	return func(ctx context.Context, table string) (rowFilter, error) {
		p, _ := principal.FromContext(ctx)
		if checker.Privileged(p) {
			return all, nil
		}
		switch table {
		case "entities":
			mayRead, err := checker.EntityFilter(ctx, p, authz.Read)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, urls []string) (map[string]bool, error) {
				known, err := registry.KnownMany(ctx, urls)
				if err != nil {
					return nil, err
				}
				shown := make(map[string]bool, len(known))
				for url, e := range known {
					shown[url] = mayRead(ctx, e)
				}
				return shown, nil
			}, nil
		case "entity_types":
			maySpawn, err := checker.TypeFilter(ctx, p, authz.Spawn)
			if err != nil {
				return nil, err
			}
			return func(_ context.Context, names []string) (map[string]bool, error) {
				shown := make(map[string]bool, len(names))
				for _, n := range names {
					shown[n] = maySpawn(n)
				}
				return shown, nil
			}, nil
		}
		return func(_ context.Context, pks []string) (map[string]bool, error) { return allOf(pks, false), nil }, nil
	}
}

func allOf(pks []string, v bool) map[string]bool {
	out := make(map[string]bool, len(pks))
	for _, pk := range pks {
		out[pk] = v
	}
	return out
}
