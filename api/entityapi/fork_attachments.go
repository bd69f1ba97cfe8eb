package entityapi

import (
	"context"

	"github.com/entityd/entityd/attachment"
	"github.com/entityd/entityd/streamdb"
)

// forkAttachments gives the copy at to the attachments of its source from that the
// copy's stream names at the fork point (message upto): each one's bytes become a
// zero-copy fork of the source's attachment stream, owned by the copy. The source's
// manifest is read only when it has attachments at all, so a fork of an entity without
// files costs one indexed lookup.
func (s *handlers) forkAttachments(ctx context.Context, tx *streamdb.Tx, from, to string, upto int64) error {
	var named map[string]bool
	var scanErr error
	keep := func(id string) bool {
		if named == nil && scanErr == nil {
			manifest, err := s.registry.ManifestAt(ctx, from, upto)
			if err != nil {
				scanErr = err
				return false
			}
			named = map[string]bool{}
			for key := range manifest {
				named[key] = true
			}
		}
		return named[attachment.ManifestKey(id)]
	}
	if _, err := attachment.ForkTx(ctx, tx, from, to, keep); err != nil {
		return err
	}
	return scanErr
}
