package remote

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/internal/httpx"
)

const maxCallbackBytes = 1 << 20

// Callbacks serves POST /_electric/wake-callbacks/:consumerId (the consumer id is the
// wake id a webhook wake carries):
//
//	{epoch, wakeId}                      claim → {ok:true, writeToken}
//	{epoch}                              heartbeat (keeps the lease) → {ok:true}
//	{epoch, acks:[{path,offset}], done}  done (acks, then the wake ends) → {ok:true}
//
// every one with the wake's claim token as Authorization: Bearer (or
// Electric-Claim-Token). Unlike the reference, the claim token is verified on claims too.
type Callbacks struct {
	Subs *dssub.Service
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
	Done *bool `json:"done"`
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
		return err
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
