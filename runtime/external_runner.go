package runtime

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"
)

// RunRunner serves the definitions as the pull-wake runner id until ctx ends: it
// registers the runner (an upsert), keeps its liveness lease with heartbeats, claims
// wakes, handles them one at a time, and between claims long-polls the runner's wake
// stream, so that it needs no inbound connection (a laptop, a job behind a firewall).
// Types are dispatched to it with RegisterTypes(ctx, Dispatch{RunnerID: id}).
func (r *External) RunRunner(ctx context.Context, id string) error {
	wakeStream, err := r.RegisterRunner(ctx, id)
	if err != nil {
		return err
	}
	base := "/_electric/runners/" + url.PathEscape(id)
	go r.every(ctx, "runner heartbeat", base+"/heartbeat", "", map[string]any{})
	tail, err := r.streamTail(ctx, wakeStream)
	if err != nil {
		return err
	}
	failures := 0
	for ctx.Err() == nil {
		var wk externalWake
		got, err := r.call(ctx, http.MethodPost, base+"/claim", "", map[string]any{}, &wk)
		var api *APIError
		switch {
		case err == nil && got && wk.WakeID == "" && wk.WakeIDDS == "":
			continue // {"done":true}: the wake was for an entity that is paused or ended
		case err == nil && got:
			failures = 0
			if err := r.handleWake(ctx, &wk); err != nil && ctx.Err() == nil {
				r.log.Warn("wake not finished; the server will wake again", zap.String("wake", wk.WakeID), zap.Error(err))
			}
			continue
		case err == nil, errors.As(err, &api) && api.Code == "ALREADY_CLAIMED":
			// Nothing to do now (or another worker of this runner has it): wait for the
			// next wake record.
			next, err := r.waitStream(ctx, wakeStream, tail)
			if err == nil {
				tail, failures = next, 0
				continue
			}
			r.log.Warn("runner: wake stream read failed", zap.Error(err))
		default:
			r.log.Warn("runner: claim failed", zap.Error(err))
		}
		failures++
		select {
		case <-ctx.Done():
		case <-time.After(r.backoff(failures)):
		}
	}
	return ctx.Err()
}

// RegisterRunner registers the runner id (or updates it: registering is an upsert) and
// returns its wake stream. RunRunner does it too; call it first to register types that
// dispatch to the runner before it starts claiming.
func (r *External) RegisterRunner(ctx context.Context, id string) (wakeStream string, err error) {
	var runner struct {
		WakeStream string `json:"wake_stream"`
	}
	if _, err := r.call(ctx, http.MethodPost, "/_electric/runners", "", map[string]any{"id": id}, &runner); err != nil {
		return "", err
	}
	return runner.WakeStream, nil
}

// streamTail is the stream's current tail offset.
func (r *External) streamTail(ctx context.Context, path string) (string, error) {
	c, err := r.readStream(ctx, path, "now", false)
	if err != nil {
		return "", err
	}
	return c.next, nil
}

// waitStream long-polls the stream after offset and returns the offset after what came
// (the same offset when the poll timed out with nothing new).
func (r *External) waitStream(ctx context.Context, path, offset string) (string, error) {
	c, err := r.readStream(ctx, path, offset, true)
	if err != nil {
		return "", err
	}
	return c.next, nil
}
