package api

import (
	"context"

	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/quota"
)

// streamQuota is checked before p creates a plain stream (quota.Limits.Streams).
func (s *Server) streamQuota(ctx context.Context, p principal.Principal) error {
	return quota.Counted(p, 1, s.cfg.Quotas.Streams, "plain streams", "ENTITYD_QUOTA_STREAMS", func(limit int) (int, error) {
		return s.streams.CountOwned(ctx, p.String(), limit)
	})
}

// grantQuota is checked before p makes n grants at once (quota.Limits.Grants), on
// streams, entities and types alike.
func (s *Server) grantQuota(ctx context.Context, p principal.Principal, n int) error {
	if n == 0 {
		return nil
	}
	return quota.Counted(p, n, s.cfg.Quotas.Grants, "grants", "ENTITYD_QUOTA_GRANTS", func(limit int) (int, error) {
		return s.grants.CountGrantsBy(ctx, p.String(), limit)
	})
}
