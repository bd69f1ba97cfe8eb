package wakereg

import (
	"context"
	"fmt"
)

// Register stores a registration made through the API and watches its source.
func (s *Service) Register(ctx context.Context, reg *Registration) error {
	st := reg.insert()
	if _, err := s.db.Exec(ctx, st.SQL, st.Args...); err != nil {
		return fmt.Errorf("wakereg: register: %w", err)
	}
	s.Noted(ctx, reg.SourceStream)
	return nil
}

// UnregisterSource drops the subscriber's registrations on source.
func (s *Service) UnregisterSource(ctx context.Context, subscriber, source string) error {
	_, err := s.db.Exec(ctx, sqlDeleteSubscriberSource, subscriber, source)
	return err
}

// UnregisterManifest drops the subscriber's registrations of a manifest key.
func (s *Service) UnregisterManifest(ctx context.Context, subscriber, key string) error {
	_, err := s.db.Exec(ctx, sqlDeleteManifest, subscriber, key)
	return err
}

// CountCreatedBy counts the registrations a principal made, up to limit.
func (s *Service) CountCreatedBy(ctx context.Context, principal string, limit int) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, sqlCountCreatedBy, principal, limit).Scan(&n)
	return n, err
}
