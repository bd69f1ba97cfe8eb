package server

import (
	"context"

	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/principal"
)

// shapeScope forces the row scoping of §1.6 on shapes: entities the caller may read,
// entity types it may spawn. The caller is the principal the api authenticated.
func shapeScope(checker *authz.Checker, registry *entity.Registry) func(context.Context, string) (func(context.Context, string) bool, error) {
	return func(ctx context.Context, table string) (func(context.Context, string) bool, error) {
		p, _ := principal.FromContext(ctx)
		if checker.Privileged(p) {
			// sees every row: no entity to load per row (a snapshot page is 10,000 rows)
			return func(context.Context, string) bool { return true }, nil
		}
		switch table {
		case "entities":
			mayRead, err := checker.EntityFilter(ctx, p, authz.Read)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, url string) bool {
				e, err := registry.Known(ctx, url)
				return err == nil && mayRead(ctx, e)
			}, nil
		case "entity_types":
			maySpawn, err := checker.TypeFilter(ctx, p, authz.Spawn)
			if err != nil {
				return nil, err
			}
			return func(_ context.Context, name string) bool { return maySpawn(name) }, nil
		}
		return func(context.Context, string) bool { return checker.Privileged(p) }, nil
	}
}
