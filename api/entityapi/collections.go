package entityapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// maxCollectionKeyLength bounds the key of a collection write (as a send's key).
const maxCollectionKeyLength = 256

// writableCollection is a type's externally_writable_collections entry: the event type
// its rows are, and the operations outsiders may do (insert only when absent).
type writableCollection struct {
	Type       string   `json:"type"`
	Contract   string   `json:"contract,omitempty"`
	Operations []string `json:"operations,omitempty"`
}

// writableCollectionOf returns the entry of collection name in t's allow-list (ok false
// when t has none for it, or an entry without an event type).
func writableCollectionOf(t *entity.Type, name string) (writableCollection, bool) {
	var all map[string]json.RawMessage
	if t == nil || t.ExternallyWritableCollections == nil || json.Unmarshal(t.ExternallyWritableCollections, &all) != nil {
		return writableCollection{}, false
	}
	raw, ok := all[name]
	if !ok {
		return writableCollection{}, false
	}
	var c writableCollection
	if json.Unmarshal(raw, &c) != nil || c.Type == "" {
		return writableCollection{}, false
	}
	if c.Operations == nil {
		c.Operations = []string{wire.OpInsert}
	}
	return c, true
}

// writeCollection is POST /_electric/entities/:type/:id/collections/:collection
// {operation: insert|update|delete, key?, value?} → {key}, 201 for an insert and 200
// otherwise: a change to one of the entity's state collections from outside its handler
// (the UI's comments), allowed only for the collections and operations the entity's type
// lists in externally_writable_collections (403 UNAUTHORIZED otherwise). The event
// carries the writer's principal in its headers, and its value is checked against the
// state schema of its event type.
func (s *handlers) writeCollection(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	b.Only("operation", "key", "value")
	op, ok := b.Enum("operation", wire.OpInsert, wire.OpUpdate, wire.OpDelete)
	if !ok && !b.Present("operation") {
		b.Details.Add("", "must have required property 'operation'")
	}
	key, hasKey := b.Str("key")
	b.MaxLen("key", key, maxCollectionKeyLength)
	value := b.Object("value")
	if err := b.Fail(); err != nil {
		return err
	}
	name := api.Param(r, "collection")
	t, err := s.registry.Type(r.Context(), e.Type)
	if err != nil && !errors.Is(err, entity.ErrTypeNotFound) {
		return err
	}
	c, ok := writableCollectionOf(t, name)
	if !ok {
		return httpx.New(http.StatusForbidden, api.CodeUnauthorized, fmt.Sprintf("Collection %.64q is not writable", name))
	}
	if !slices.Contains(c.Operations, op) {
		return httpx.New(http.StatusForbidden, api.CodeUnauthorized,
			fmt.Sprintf("Operation %q is not allowed on collection %.64q", op, name))
	}
	if op != wire.OpDelete && value == nil {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "value is required for "+op)
	}
	if op != wire.OpInsert && (!hasKey || key == "") {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "key is required for "+op)
	}
	if key == "" {
		key = name + "-" + uuid.NewString()
	}
	if err := s.checkStateEvent(e, t, c.Type, value); err != nil {
		return err
	}
	p := api.Caller(r)
	var who rawjson.Object
	who.String("url", p.URL()).String("kind", p.Kind).String("id", p.ID)
	var headers rawjson.Object
	headers.String("operation", op).Time("timestamp", s.streams.Clock().Now()).Raw("principal", who.Bytes())
	var ev rawjson.Object
	ev.String("type", c.Type).String("key", key)
	if op != wire.OpDelete {
		ev.Raw("value", value)
	}
	ev.Raw("headers", headers.Bytes())
	_, err = s.streams.Append(r.Context(), entity.SendTo(e.URL, ev.Bytes()))
	var closed *streamdb.ClosedError
	if errors.Is(err, entity.ErrNotRunning) || errors.As(err, &closed) {
		return httpx.New(http.StatusConflict, api.CodeNotRunning, "Entity is not accepting writes")
	}
	if err != nil {
		return err
	}
	var o rawjson.Object
	o.String("key", key)
	status := http.StatusOK
	if op == wire.OpInsert {
		status = http.StatusCreated
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(o.Bytes())
	return err
}

// checkStateEvent checks a value of event type typ against the entity's state schemas,
// as the reference checks a write: 422 UNKNOWN_EVENT_TYPE when the schemas are declared
// and name no such type, 422 SCHEMA_VALIDATION_FAILED when the value does not match.
func (s *handlers) checkStateEvent(e *entity.Entity, t *entity.Type, typ string, value json.RawMessage) error {
	schema, declared, err := s.registry.StateSchema(e, t, typ)
	if err != nil {
		return err
	}
	if declared && schema == nil {
		return httpx.New(http.StatusUnprocessableEntity, api.CodeUnknownEventType, fmt.Sprintf("Unknown event type %q", typ))
	}
	if schema == nil || value == nil {
		return nil
	}
	if d := schema.Validate(value); len(d) > 0 {
		return httpx.New(http.StatusUnprocessableEntity, api.CodeSchemaValidationFailed, "Validation failed").
			WithDetails(d)
	}
	return nil
}
