package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
)

// Dispatch says where the server sends the wakes of a type's entities: a Webhook this
// process serves, or a runner (RunRunner).
type Dispatch struct {
	WebhookURL string
	RunnerID   string
	// SubscriptionID, for a webhook, gives each entity a subscription of its own
	// (<SubscriptionID>:<hash of the entity URL>), so that entities are woken
	// independently and in parallel. Empty: the type's entities share one subscription
	// and are woken one wake at a time (a wake lists every entity with new work).
	SubscriptionID string
}

// RegisterTypes registers (or updates) the definitions' entity types on the server with
// a default dispatch policy pointing at d. Entities spawned from then on are linked to
// it when they are spawned.
func (r *External) RegisterTypes(ctx context.Context, d Dispatch) error {
	var target map[string]string
	switch {
	case d.WebhookURL != "" && d.RunnerID == "":
		target = map[string]string{"type": "webhook", "url": d.WebhookURL}
		if d.SubscriptionID != "" {
			target["subscription_id"] = d.SubscriptionID
		}
	case d.RunnerID != "" && d.WebhookURL == "":
		target = map[string]string{"type": "runner", "runnerId": d.RunnerID}
	default:
		return errors.New("runtime: dispatch to a webhook URL or to a runner id (one of them)")
	}
	for _, def := range r.defs {
		tj, err := def.TypeJSON()
		if err != nil {
			return err
		}
		body := map[string]any{"name": def.Type, "description": def.Description,
			"default_dispatch_policy": map[string]any{"targets": []any{target}}}
		for k, v := range map[string]json.RawMessage{"creation_schema": tj.Creation, "inbox_schemas": tj.InboxSchemas,
			"state_schemas": tj.StateSchemas, "slash_commands": tj.SlashCommands} {
			if v != nil {
				body[k] = v
			}
		}
		if _, err := r.call(ctx, http.MethodPost, "/_electric/entity-types", "", body, nil); err != nil {
			return err
		}
	}
	return nil
}
