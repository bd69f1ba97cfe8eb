package external

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/streamdb"
)

// Dispatch links each spawned entity's main stream to the webhook its type dispatches to
// (Electric's dispatch policies), and unlinks it when the entity stops or is killed, in
// the transactions that do those. A type dispatches to the webhook targets of its
// default_dispatch_policy, or else to its serve_endpoint.
type Dispatch struct {
	Subs     *dssub.Service
	Registry *entity.Registry
	// Store and Log serve the links made on send (BeforeSend); without Store, entities
	// are linked at spawn only.
	Store *streamdb.Store
	Log   *zap.Logger

	sent sendLinks // entities linked on send, by type revision
}

// refusal reports an error of ours that refuses a link (an httpx error), not a failure
// of the database.
func refusal(err error) bool {
	var he *httpx.Error
	return errors.As(err, &he)
}

// subscriptionFor names the subscription of an entity's target as the reference does:
// "<subscription_id>:<16 hex of sha256(entity url)>" (one per entity), or
// "webhook:<16 hex of sha256(webhook url)>" (shared by the type's entities), or
// "runner:<runner id>" for a runner.
func subscriptionFor(tg entity.DispatchTarget, entityURL string) string {
	if tg.RunnerID != "" {
		return SubscriptionID(tg.RunnerID)
	}
	if tg.SubscriptionID != "" {
		return tg.SubscriptionID + ":" + hash16(entityURL)
	}
	return "webhook:" + hash16(tg.URL)
}

func hash16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}

// OnSpawn is the registry's spawn hook.
func (d *Dispatch) OnSpawn(ctx context.Context, tx *streamdb.Tx, e *entity.Entity, t *entity.Type) (func(), error) {
	targets, err := t.DispatchTargets()
	if err != nil || len(targets) == 0 {
		return nil, err
	}
	var afters []func()
	for _, tg := range targets {
		var after func()
		if tg.RunnerID != "" {
			run, err := scanRunner(tx.QueryRow(ctx, sqlSelectRunner, tg.RunnerID))
			if err != nil {
				return nil, err
			}
			if run == nil {
				return nil, httpx.New(http.StatusConflict, "NOT_RUNNING",
					"Type "+t.Name+" dispatches to runner "+jsonQuote(tg.RunnerID)+", which is not registered")
			}
			if want := runnerOwner(tg, e); run.OwnerPrincipal != want {
				// The runner's claims hand out this entity's wakes and write tokens: only
				// the principal the type binds the runner to may hold them.
				return nil, httpx.New(http.StatusConflict, "NOT_RUNNING",
					"Type "+t.Name+" dispatches to runner "+jsonQuote(tg.RunnerID)+", which is registered by another principal than "+want)
			}
			after, err = d.Subs.DispatchLinkPull(ctx, tx, subscriptionFor(tg, e.URL), run.WakeStream, e.MainStream())
			if err != nil {
				return nil, err
			}
		} else if after, err = d.Subs.DispatchLink(ctx, tx, subscriptionFor(tg, e.URL), tg.URL, e.MainStream()); err != nil {
			return nil, err
		}
		afters = append(afters, after)
	}
	return func() {
		for _, f := range afters {
			f()
		}
	}, nil
}

// OnEnd unlinks an entity that stopped or was killed from its type's targets.
func (d *Dispatch) OnEnd(ctx context.Context, tx *streamdb.Tx, url, _ string) error {
	typ, _, _, ok := entitypath.Parse(entitypath.Main(url))
	if !ok {
		return nil
	}
	t, err := d.Registry.Type(ctx, typ)
	if errors.Is(err, entity.ErrTypeNotFound) {
		return nil // a deleted type: its subscriptions are the client's to remove
	}
	if err != nil {
		return err
	}
	targets, err := t.DispatchTargets()
	if err != nil {
		return nil // a policy that cannot be read linked nothing at the spawn either
	}
	for _, tg := range targets {
		if err := d.Subs.DispatchUnlink(ctx, tx, subscriptionFor(tg, url), entitypath.Main(url)); err != nil {
			return err
		}
	}
	return nil
}

// runnerOwner is the principal a runner target's runner must belong to: the one the
// type binds it to, or for a type without one (the server's own), the entity's
// creator, as the reference asks of a runner target.
func runnerOwner(tg entity.DispatchTarget, e *entity.Entity) string {
	if tg.RunnerOwner != "" {
		return tg.RunnerOwner
	}
	if e.CreatedBy != nil {
		if p, ok := principal.ParseAny(*e.CreatedBy); ok {
			return p.String()
		}
	}
	return principal.Dev.String()
}
