package entityapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/quota"
)

// quotas checks the per-principal quotas of what the API creates (package quota); the
// owners of the tables count. Counts are read before the creation, so concurrent
// creations by one principal may pass a quota by a few: a bound, not an invoice.
type quotas struct {
	s      *API
	limits quota.Limits
}

// schedule is checked before p stores schedule id of the entity at url (replacing one is
// no new one).
func (q quotas) schedule(ctx context.Context, p principal.Principal, url, id string) error {
	if q.limits.Schedules <= 0 || quota.Exempt(p) {
		return nil
	}
	if exists, err := q.s.schedules.Exists(ctx, url, id); err != nil || exists {
		return err
	}
	return quota.Counted(p, 1, q.limits.Schedules, "schedules", "ENTITYD_QUOTA_SCHEDULES", func(limit int) (int, error) {
		return q.s.schedules.CountBy(ctx, p.String(), limit)
	})
}

// observation is checked before p makes a new tag observation.
func (q quotas) observation(ctx context.Context, p principal.Principal) error {
	return quota.Counted(p, 1, q.limits.Observations, "tag observations", "ENTITYD_QUOTA_OBSERVATIONS", func(limit int) (int, error) {
		return q.s.members.CountBy(ctx, p.String(), limit)
	})
}

// typ is checked before p registers a new entity type.
func (q quotas) typ(ctx context.Context, p principal.Principal) error {
	return quota.Counted(p, 1, q.limits.Types, "entity types", "ENTITYD_QUOTA_TYPES", func(limit int) (int, error) {
		return q.s.registry.CountRegisteredBy(ctx, p.String(), limit)
	})
}

// wakes is checked before p registers a cross-entity wake.
func (q quotas) wakes(ctx context.Context, p principal.Principal) error {
	return quota.Counted(p, 1, q.limits.WakeRegistrations, "wake registrations", "ENTITYD_QUOTA_WAKE_REGISTRATIONS", func(limit int) (int, error) {
		return q.s.wakes.CountCreatedBy(ctx, p.String(), limit)
	})
}

// webhookSource is checked before p makes a webhook source.
func (q quotas) webhookSource(ctx context.Context, p principal.Principal) error {
	return quota.Counted(p, 1, q.limits.WebhookSources, "webhook sources", "ENTITYD_QUOTA_WEBHOOK_SOURCES", func(limit int) (int, error) {
		return q.s.webhooks.CountOwnedBy(ctx, p.String(), limit)
	})
}

// tooManyTags answers a tag beyond the tags an entity may have.
func (s *handlers) tooManyTags() error {
	e := httpx.New(http.StatusTooManyRequests, quota.CodeExceeded,
		fmt.Sprintf("An entity has at most %d tags (ENTITYD_MAX_TAGS_PER_ENTITY)", s.registry.TagLimit()))
	e.RetryAfter = quota.RetryAfter
	return e
}
