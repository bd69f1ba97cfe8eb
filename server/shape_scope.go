package server

import (
	"context"
	"time"

	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/shapes"
)

// rowFilter is what shapes.Options.Scope returns: the visible keys among a response's rows.
type rowFilter = func(ctx context.Context, rows []shapes.Row) (map[string]bool, error)

// shapeScope forces the row scoping of §1.6 on shapes. The caller is the principal the
// api authenticated. As the reference's proxy scopes them:
//   - entities: those it may read; entity_types: those it may spawn;
//   - runners and runner_runtime_diagnostics: its own (privileged principals too: the
//     reference shows every principal only the runners it registered);
//   - entity_effective_permissions: the grants to it (or to its kind) on entities it may
//     read, unexpired, and their revokes;
//   - users: itself (the reference shows every user of the tenant, for its share
//     dialog's picker; entityd keeps principals from learning of each other, so only
//     privileged principals see every user).
//
// Privileged principals see every row of the tables but runners. A response's entities
// are loaded in one query, not one per row (a snapshot page is 10,000 rows).
func shapeScope(checker *authz.Checker, registry *entity.Registry) func(context.Context, string) (rowFilter, error) {
	return func(ctx context.Context, table string) (rowFilter, error) {
		p, _ := principal.FromContext(ctx)
		switch table {
		case "runners", "runner_runtime_diagnostics":
			return byColumn("owner_principal", p.String()), nil
		}
		if checker.Privileged(p) {
			return func(_ context.Context, rows []shapes.Row) (map[string]bool, error) { return allOf(rows, true), nil }, nil
		}
		switch table {
		case "entities":
			mayRead, err := readable(ctx, checker, registry, p)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, rows []shapes.Row) (map[string]bool, error) {
				urls := make([]string, len(rows))
				for i, r := range rows {
					urls[i] = r.Key
				}
				return mayRead(ctx, urls)
			}, nil
		case "entity_types":
			maySpawn, err := checker.TypeFilter(ctx, p, authz.Spawn)
			if err != nil {
				return nil, err
			}
			return func(_ context.Context, rows []shapes.Row) (map[string]bool, error) {
				shown := make(map[string]bool, len(rows))
				for _, r := range rows {
					shown[r.Key] = maySpawn(r.Key)
				}
				return shown, nil
			}, nil
		case "users":
			if p.Kind != "user" {
				return func(_ context.Context, rows []shapes.Row) (map[string]bool, error) { return allOf(rows, false), nil }, nil
			}
			return func(_ context.Context, rows []shapes.Row) (map[string]bool, error) {
				shown := make(map[string]bool, len(rows))
				for _, r := range rows {
					shown[r.Key] = r.Key == p.ID
				}
				return shown, nil
			}, nil
		case "entity_effective_permissions":
			mayRead, err := readable(ctx, checker, registry, p)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, rows []shapes.Row) (map[string]bool, error) {
				now := time.Now()
				var mine []shapes.Row
				var urls []string
				for _, r := range rows {
					if grantedTo(r.Values, p) && !expired(r.Values["expires_at"], now) {
						mine = append(mine, r)
						urls = append(urls, value(r.Values["entity_url"]))
					}
				}
				read, err := mayRead(ctx, urls)
				if err != nil {
					return nil, err
				}
				shown := make(map[string]bool, len(mine))
				for _, r := range mine {
					// a revoke reaches the grant's subject even though it may no longer read
					// the entity (the delete shows the key alone)
					shown[r.Key] = r.Deleted || read[value(r.Values["entity_url"])]
				}
				return shown, nil
			}, nil
		}
		return func(_ context.Context, rows []shapes.Row) (map[string]bool, error) { return allOf(rows, false), nil }, nil
	}
}

// readable answers, for entity URLs, which the caller may read (unknown ones: no).
func readable(ctx context.Context, checker *authz.Checker, registry *entity.Registry, p principal.Principal) (func(context.Context, []string) (map[string]bool, error), error) {
	mayRead, err := checker.EntityFilter(ctx, p, authz.Read)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, urls []string) (map[string]bool, error) {
		if len(urls) == 0 {
			return nil, nil
		}
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
}

// byColumn shows the rows whose column holds want.
func byColumn(column, want string) rowFilter {
	return func(_ context.Context, rows []shapes.Row) (map[string]bool, error) {
		shown := make(map[string]bool, len(rows))
		for _, r := range rows {
			shown[r.Key] = value(r.Values[column]) == want
		}
		return shown, nil
	}
}

// grantedTo reports whether a grant row names p or p's kind.
func grantedTo(row map[string]*string, p principal.Principal) bool {
	switch value(row["subject_kind"]) {
	case "principal":
		return value(row["subject_value"]) == p.String()
	case "principal_kind":
		return value(row["subject_value"]) == p.Kind
	}
	return false
}

// expired reads a grant's expires_at as the shape writes a timestamptz.
func expired(at *string, now time.Time) bool {
	if at == nil {
		return false
	}
	t, err := time.Parse("2006-01-02 15:04:05.999999-07", *at)
	return err == nil && !t.After(now)
}

func value(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func allOf(rows []shapes.Row, v bool) map[string]bool {
	out := make(map[string]bool, len(rows))
	for _, r := range rows {
		out[r.Key] = v
	}
	return out
}
