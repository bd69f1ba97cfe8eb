package entity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/entityd/entityd/internal/principal"
)

// DispatchTarget is one webhook a type dispatches to.
type DispatchTarget struct {
	URL            string // a webhook, or
	RunnerID       string // a pull-wake runner (its subscription is runner:<id>)
	SubscriptionID string // webhooks, optional: one subscription per entity under this prefix
	// RunnerOwner is the principal the runner must belong to: the target's
	// owner_principal, else the type's registrant ("" for the server's own types,
	// whose runners must belong to whoever spawns the entity, as in the reference).
	RunnerOwner string
}

// dispatchPolicy is default_dispatch_policy as registered.
type dispatchPolicy struct {
	Targets []struct {
		Type           string `json:"type"`
		URL            string `json:"url"`
		RunnerID       string `json:"runnerId"`
		SubscriptionID string `json:"subscription_id"`
		OwnerPrincipal string `json:"owner_principal"`
	} `json:"targets"`
}

// DispatchTargets reads the webhooks the type's entities are linked to when they are
// spawned: the webhook targets of default_dispatch_policy, or else serve_endpoint.
func (t *Type) DispatchTargets() ([]DispatchTarget, error) {
	var out []DispatchTarget
	if len(t.DefaultDispatchPolicy) > 0 && string(t.DefaultDispatchPolicy) != "null" {
		var p dispatchPolicy
		if err := json.Unmarshal(t.DefaultDispatchPolicy, &p); err != nil {
			return nil, fmt.Errorf("default_dispatch_policy: %w", err)
		}
		for _, tg := range p.Targets {
			switch tg.Type {
			case "webhook":
				if tg.URL == "" {
					return nil, errors.New("default_dispatch_policy: a webhook target needs a url")
				}
				out = append(out, DispatchTarget{URL: tg.URL, SubscriptionID: tg.SubscriptionID})
			case "runner":
				if tg.RunnerID == "" {
					return nil, errors.New("default_dispatch_policy: a runner target needs a runnerId")
				}
				owner := t.RegisteredBy
				if tg.OwnerPrincipal != "" {
					p, ok := principal.Parse(tg.OwnerPrincipal)
					if !ok {
						return nil, errors.New("default_dispatch_policy: a runner target's owner_principal must be a principal (kind:id)")
					}
					owner = p.String()
				}
				out = append(out, DispatchTarget{RunnerID: tg.RunnerID, RunnerOwner: owner})
			default:
				return nil, fmt.Errorf("default_dispatch_policy: unknown target type %q", tg.Type)
			}
		}
		return out, nil
	}
	if t.ServeEndpoint != nil && *t.ServeEndpoint != "" {
		out = append(out, DispatchTarget{URL: *t.ServeEndpoint})
	}
	return out, nil
}

// RunnerBinding is a type naming a runner, and the principal the runner must belong to
// for the type's entities to be dispatched to it.
type RunnerBinding struct {
	Type, Owner string
}

// RunnerBindings lists the types that name runner id in their dispatch policy, with
// the owner each binds it to (types whose owner is "" bind it to no one in particular).
func (r *Registry) RunnerBindings(ctx context.Context, id string) ([]RunnerBinding, error) {
	rows, err := r.pool.Query(ctx, sqlSelectDispatchingTypes)
	if err != nil {
		return nil, fmt.Errorf("entity: types with dispatch policies: %w", err)
	}
	defer rows.Close()
	var out []RunnerBinding
	for rows.Next() {
		t, err := scanType(rows)
		if err != nil {
			return nil, err
		}
		targets, err := t.DispatchTargets()
		if err != nil {
			continue // a policy that cannot be read dispatches nowhere
		}
		for _, tg := range targets {
			if tg.RunnerID == id && tg.RunnerOwner != "" {
				out = append(out, RunnerBinding{Type: t.Name, Owner: tg.RunnerOwner})
			}
		}
	}
	return out, rows.Err()
}
