package external

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/hosted"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/slashcmd"
)

// maxCallbackBytes bounds a callback body; a done may carry a handler's effects.
const maxCallbackBytes = 4 << 20

// Callbacks serves POST /_electric/wake-callbacks/:consumerId (the consumer id is the
// wake id a webhook wake carries):
//
//	{epoch, wakeId}                      claim → {ok:true, writeToken}
//	{epoch}                              heartbeat (keeps the lease) → {ok:true}
//	{epoch, acks:[{path,offset}], done}  done (acks, then the wake ends) → {ok:true}
//	{epoch, acks, effects}               acks with a handler's writes (entityd) → {ok:true}
//
// every one with the wake's claim token as Authorization: Bearer (or
// Electric-Claim-Token). Unlike the reference, the claim token is verified on claims too.
//
// entityd extends done with "effects": what the handler wrote, committed together with
// the acknowledgement (see hosted.Runner.Decode). The Go SDK uses it when it runs
// outside the server; a handler that writes with its write token does not need it.
type Callbacks struct {
	Subs *dssub.Service
	// Effects decodes and checks a done's effects (nil: effects are refused).
	Effects func(ctx context.Context, raw json.RawMessage) (dssub.Effects, error)
}

// Routes registers the route (mounted under /_electric/wake-callbacks by the api).
func (c *Callbacks) Routes(r chi.Router, wrap func(httpx.HandlerFunc) http.HandlerFunc) {
	r.Method(http.MethodPost, "/{consumerId}", wrap(c.callback))
}

type callbackBody struct {
	Epoch       json.RawMessage `json:"epoch"`
	Generation  json.RawMessage `json:"generation"`
	WakeID      *string         `json:"wakeId"`
	WakeIDSnake *string         `json:"wake_id"`
	Acks        []struct {
		Path   *string `json:"path"`
		Stream *string `json:"stream"`
		Offset *string `json:"offset"`
	} `json:"acks"`
	Done    *bool           `json:"done"`
	Effects json.RawMessage `json:"effects"`
}

func (c *Callbacks) callback(w http.ResponseWriter, r *http.Request) error {
	consumer := chi.URLParam(r, "consumerId")
	var body callbackBody
	if err := httpx.ReadControlJSON(w, r, &body, maxCallbackBytes); err != nil {
		return err
	}
	bad := func(msg string) error { return httpx.New(http.StatusBadRequest, httpx.CodeInvalidRequest, msg) }
	epoch := body.Epoch
	if epoch == nil {
		epoch = body.Generation
	}
	if epoch == nil {
		return bad("epoch is required")
	}
	gen, err := strconv.ParseInt(string(epoch), 10, 64) // a JSON integer, not a string
	if err != nil || gen < 1 {
		return bad("epoch must be a positive integer")
	}
	wakeID := body.WakeID
	if wakeID == nil {
		wakeID = body.WakeIDSnake
	}
	if wakeID != nil && *wakeID != consumer {
		return bad("wakeId does not match the callback URL")
	}
	token := httpx.Bearer(r)
	if token == "" {
		token = strings.TrimSpace(r.Header.Get("Electric-Claim-Token"))
	}
	cb := dssub.WakeCallback{WakeID: consumer, Token: token, Generation: gen, Done: body.Done != nil && *body.Done}
	for _, a := range body.Acks {
		path := a.Path
		if path == nil {
			path = a.Stream
		}
		if path == nil || a.Offset == nil {
			return bad("every ack needs a path and an offset")
		}
		cb.Acks = append(cb.Acks, dssub.Ack{Path: *path, Offset: *a.Offset})
	}

	if len(body.Effects) > 0 && string(body.Effects) != "null" {
		if wakeID != nil && !cb.Done {
			return bad("effects are sent with an acknowledgement or a done, not with a claim")
		}
		if c.Effects == nil {
			return bad("this server does not accept effects")
		}
		// Effects are checked against the registry: strangers are refused first.
		if err := c.Subs.VerifyCallbackToken(cb.Token, consumer, gen); err != nil {
			return err
		}
		eff, err := c.Effects(r.Context(), body.Effects)
		var refused *hosted.EffectsError
		if errors.As(err, &refused) {
			return httpx.New(http.StatusUnprocessableEntity, "INVALID_EFFECTS", refused.Msg)
		} else if err != nil {
			return err
		}
		cb.Effects = eff
	}

	if wakeID != nil && !cb.Done {
		writeToken, err := c.Subs.ClaimWake(r.Context(), cb)
		if err != nil {
			return err
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "writeToken": writeToken})
		return nil
	}
	nextWake, ended, err := c.Subs.Callback(r.Context(), cb)
	if err != nil {
		return effectsError(err)
	}
	out := map[string]any{"ok": true}
	if cb.Done {
		out["next_wake"] = nextWake
	}
	if ended {
		out["ended"] = true // a late done: the wake had already ended
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// effectsError answers the ways committing a done's effects can fail.
func effectsError(err error) error {
	var invalid *slashcmd.InvalidError
	switch {
	case errors.Is(err, entity.ErrNotRunning):
		return httpx.New(http.StatusConflict, "NOT_RUNNING", err.Error())
	case errors.As(err, &invalid), errors.Is(err, slashcmd.ErrTooManyCommands):
		return httpx.New(http.StatusUnprocessableEntity, "INVALID_EFFECTS", err.Error())
	}
	return err
}
