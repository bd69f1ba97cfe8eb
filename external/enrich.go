package external

import (
	"context"
	"errors"

	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/principal"
)

// CallbackPrefix is where wake callbacks are served.
const CallbackPrefix = "/_electric/wake-callbacks/"

// Enricher adds Electric's fields to a webhook wake whose primary stream is an entity's
// main stream: who to call back and with what, the entity, and the principal that
// created it. Wakes of other streams stay as the Durable Streams protocol has them.
//
// As in Electric, a paused or ended entity is not woken: its wake is finished as done
// (dssub.ErrNotWanted). What it acknowledges is what a paused entity ignores anyway
// (signals other than SIGCONT, SIGTERM and SIGKILL); a send resumes a paused entity, and
// held (paused-mode) messages stay in the entity's state until released.
func Enricher(registry *entity.Registry) dssub.Enricher {
	return func(ctx context.Context, w dssub.WakeContext) (map[string]any, error) {
		return notification(ctx, registry, w, "inbox")
	}
}

// notWoken reports an entity whose handler is not to be woken.
func notWoken(e *entity.Entity) bool { return e.Status == entity.StatusPaused || e.Status.Terminal() }

// notification is Electric's view of a wake of an entity's main stream (nil for a wake
// of any other stream): the fields a webhook wake adds, and what a runner's claim returns.
func notification(ctx context.Context, registry *entity.Registry, w dssub.WakeContext, trigger string) (map[string]any, error) {
	_, url, kind, ok := entitypath.Parse(w.StreamPath)
	if !ok || kind != entitypath.KindMain {
		return nil, nil
	}
	e, err := registry.Current(ctx, url) // fresh: status and tags as they are now
	if errors.Is(err, entity.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if notWoken(e) {
		return nil, dssub.ErrNotWanted
	}
	if err := markRunning(ctx, registry, e); err != nil {
		return nil, err
	}
	out := map[string]any{
		"consumerId":     w.WakeID,
		"consumer_id":    w.WakeID,
		"epoch":          w.Generation,
		"wakeId":         w.WakeID,
		"streamPath":     w.StreamPath,
		"primary_stream": w.StreamPath,
		"callback":       w.Origin + CallbackPrefix + principal.EncodeURIComponent(w.WakeID),
		"claimToken":     w.CallbackToken,
		"token":          w.CallbackToken,
		"triggerEvent":   trigger,
		"entity":         entityContext(e),
	}
	if e.CreatedBy != nil {
		if p, ok := principal.ParseAny(*e.CreatedBy); ok {
			out["principal"] = map[string]any{"url": p.URL(), "key": p.Kind + ":" + p.ID, "kind": p.Kind, "id": p.ID}
		}
	}
	return out, nil
}

// entityContext is the entity as a wake shows it (Electric's field names).
func entityContext(e *entity.Entity) map[string]any {
	tags := e.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	ctx := map[string]any{
		"url":     e.URL,
		"type":    e.Type,
		"status":  string(e.Status),
		"streams": map[string]string{"main": e.MainStream()},
		"tags":    tags,
	}
	if e.SpawnArgs != nil {
		ctx["spawnArgs"] = e.SpawnArgs
	}
	if e.CreatedBy != nil {
		ctx["createdBy"] = *e.CreatedBy
	}
	return ctx
}
