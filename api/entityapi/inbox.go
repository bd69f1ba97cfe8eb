package entityapi

import (
	"errors"
	"net/http"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/wire"
)

// patchInbox is PATCH /_electric/entities/:type/:id/inbox/:messageKey: edit a message
// (payload, position, mode, status) with an inbox update event. Releasing a paused
// message (mode) or cancelling it (status) is how a held message is let go.
func (s *handlers) patchInbox(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	var p inbox.Patch
	p.Payload = b.Raw("payload")
	if v, ok := b.Str("position"); ok {
		b.MaxLen("position", v, maxPositionLength)
		p.Position = &v
	}
	if v, ok := b.Enum("mode", wire.ModeImmediate, wire.ModeQueued, wire.ModePaused, wire.ModeSteer); ok {
		p.Mode = &v
	}
	if v, ok := b.Enum("status", inbox.StatusPending, inbox.StatusProcessed, inbox.StatusCancelled); ok {
		p.Status = &v
	}
	if err := b.Fail(); err != nil {
		return err
	}
	if p.Empty() {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
			"Empty patch: give at least one of payload, position, mode, status")
	}
	txid, err := s.sender.PatchMessage(r.Context(), e, api.Param(r, "messageKey"), &p)
	if err != nil {
		return inboxEditError(err)
	}
	return writeTxid(w, txid)
}

// deleteInbox is DELETE /_electric/entities/:type/:id/inbox/:messageKey: an inbox delete
// event (a held message is withdrawn).
func (s *handlers) deleteInbox(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	txid, err := s.sender.DeleteMessage(r.Context(), e, api.Param(r, "messageKey"))
	if err != nil {
		return inboxEditError(err)
	}
	return writeTxid(w, txid)
}

func inboxEditError(err error) error {
	switch {
	case errors.Is(err, inbox.ErrMessageNotFound):
		return httpx.New(http.StatusNotFound, api.CodeNotFound, "Inbox message not found")
	case errors.Is(err, entity.ErrNotRunning):
		return httpx.New(http.StatusConflict, api.CodeNotRunning, "Entity is not accepting writes")
	case errors.Is(err, entity.ErrForkInProgress):
		return forkInProgress()
	}
	return err
}

func writeTxid(w http.ResponseWriter, txid string) error {
	var o rawjson.Object
	o.String("txid", txid)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(o.Bytes())
	return err
}
