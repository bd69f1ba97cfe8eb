package entity

import (
	"encoding/json"
	"errors"
	"fmt"
)

// DispatchTarget is one webhook a type dispatches to.
type DispatchTarget struct {
	URL            string // a webhook, or
	RunnerID       string // a pull-wake runner (its subscription is runner:<id>)
	SubscriptionID string // webhooks, optional: one subscription per entity under this prefix
}

// dispatchPolicy is default_dispatch_policy as registered.
type dispatchPolicy struct {
	Targets []struct {
		Type           string `json:"type"`
		URL            string `json:"url"`
		RunnerID       string `json:"runnerId"`
		SubscriptionID string `json:"subscription_id"`
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
				out = append(out, DispatchTarget{RunnerID: tg.RunnerID})
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
