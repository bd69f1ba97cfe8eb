package dssub

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/streamdb"
)

// Dispatch subscriptions: the server, not a client, links an entity's main stream to
// the webhook its type dispatches to (Electric's dispatch policies), in the transaction
// that spawns or ends the entity.

// DispatchLink links stream path to webhook subscription id, creating the subscription
// (no pattern, webhookURL) when it does not exist yet. The stream is linked from its
// start: it is linked in the transaction that spawns the entity, so what the spawn wrote
// (entity_created, an initial message) is the handler's first work, as it is for a
// handler in the server. after must run once the transaction has committed: it makes
// this process match the new link at once.
func (s *Service) DispatchLink(ctx context.Context, tx *streamdb.Tx, id, webhookURL, path string) (after func(), err error) {
	return s.dispatchLink(ctx, tx, id, path,
		&createInput{Type: typeWebhook, Streams: []string{}, WebhookURL: webhookURL, LeaseTTLms: defaultLeaseTTL})
}

// DispatchLinkPull is DispatchLink for a pull-wake subscription announcing its wakes on
// wakeStream (a runner's): created with that wake stream when it does not exist yet.
func (s *Service) DispatchLinkPull(ctx context.Context, tx *streamdb.Tx, id, wakeStream, path string) (after func(), err error) {
	ws := normalizePath(strings.TrimPrefix(wakeStream, streamRoot))
	return s.dispatchLink(ctx, tx, id, path,
		&createInput{Type: typePullWake, Streams: []string{}, WakeStream: ws, LeaseTTLms: defaultLeaseTTL})
}

func (s *Service) dispatchLink(ctx context.Context, tx *streamdb.Tx, id, path string, in *createInput) (func(), error) {
	rel := normalizePath(strings.TrimPrefix(path, streamRoot))
	sb, err := lockSub(ctx, tx, id, s.clock)
	if err != nil {
		return nil, err
	}
	if sb == nil {
		base := s.opts.PublicURL
		if base == "" {
			base = httpx.OriginOf(ctx)
		}
		if _, err := tx.Exec(ctx, sqlInsertSubscription,
			id, in.Type, in.Pattern, in.WebhookURL, in.WakeStream, in.LeaseTTLms, in.Description, in.hash(), base,
			""); err != nil { // made by a dispatch policy, not by a principal: no quota
			return nil, err
		}
	} else if sb.Type != in.Type {
		return nil, fail(http.StatusConflict, codeAlreadyExists, "Subscription "+id+" exists and is not a "+in.Type+" subscription")
	}
	if _, err := tx.Exec(ctx, sqlLinkExplicitFromStart, id, []string{rel}, streamRoot); err != nil {
		return nil, fmt.Errorf("dssub: link %s: %w", rel, err)
	}
	if err := bumpVersion(ctx, tx); err != nil {
		return nil, err
	}
	return func() { s.changed(context.WithoutCancel(ctx)) }, nil
}

// DispatchUnlink removes stream path from subscription id (an entity that ended).
func (s *Service) DispatchUnlink(ctx context.Context, tx *streamdb.Tx, id, path string) error {
	rel := normalizePath(strings.TrimPrefix(path, streamRoot))
	tag, err := tx.Exec(ctx, sqlUnmarkExplicit, id, rel)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	if _, err := tx.Exec(ctx, sqlDeleteUnlinkedStreams, id, rel); err != nil {
		return err
	}
	return bumpVersion(ctx, tx)
}
