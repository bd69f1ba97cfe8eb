package entity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/wire"
)

// Principal entities: every principal that uses the server has an entity of the built-in
// type "principal" at its URL (/principal/user%3Aada), created on first use, whose
// stream carries the principal's identity (an "identity" event keyed "self"). Electric's
// UI and runtime name senders and creators by these URLs. Nobody spawns, kills, signals,
// tags, schedules or forks them; the only change is an update_identity message, which
// only privileged principals may send.
const (
	// IdentityUpdateType is the message a privileged principal sends to a principal
	// entity to replace its identity.
	IdentityUpdateType = "update_identity"
	// IdentityEventType is the event that holds a principal entity's identity.
	IdentityEventType = "identity"
	// identityKey is the key of that event.
	identityKey = "self"
)

// principalIdentitySchema is the identity of a principal, as its entity's identity event
// holds it: who it is (kind, id, key, url), when it changed, and what an identity
// provider says of it.
const principalIdentitySchema = `{"type":"object",
 "properties":{
  "kind":{"enum":["user","agent","service","system"]},
  "id":{"type":"string"},"key":{"type":"string"},"url":{"type":"string"},
  "updated_at":{"type":"string"},"created_at":{"type":"string"},
  "display_name":{"type":"string"},"email":{"type":"string"},"avatar_url":{"type":"string"},
  "auth_provider":{"type":"string"},"auth_subject":{"type":"string"},
  "claims":{"type":"object"}},
 "required":["kind","id","key","url","updated_at"],
 "additionalProperties":false}`

// PrincipalType is the built-in type's definition: what EnsurePrincipalType registers.
func PrincipalType() *Type {
	return &Type{
		Name:         entitypath.PrincipalType,
		Description:  "built-in principal entity",
		InboxSchemas: compactJSON(`{"` + IdentityUpdateType + `":{"type":"object","properties":{"identity":` + principalIdentitySchema + `},"required":["identity"],"additionalProperties":false}}`),
		StateSchemas: compactJSON(`{"` + IdentityEventType + `":` + principalIdentitySchema + `}`),
	}
}

func compactJSON(s string) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic("entity: built-in schema: " + err.Error())
	}
	return b.Bytes()
}

// EnsurePrincipalType registers the built-in principal type when it is missing or its
// definition differs from this server's (an upgrade); otherwise it writes nothing, so
// restarts do not move its revision.
func (r *Registry) EnsurePrincipalType(ctx context.Context) (*Type, error) {
	want := PrincipalType()
	t, err := r.loadType(ctx, want.Name)
	if err == nil && t.Description == want.Description && bytes.Equal(t.InboxSchemas, want.InboxSchemas) &&
		bytes.Equal(t.StateSchemas, want.StateSchemas) && t.CreationSchema == nil && t.DefaultDispatchPolicy == nil &&
		t.SlashCommands == nil && t.ServeEndpoint == nil && t.ExternallyWritableCollections == nil {
		return t, nil
	}
	if err != nil && !errors.Is(err, ErrTypeNotFound) {
		return nil, err
	}
	return r.RegisterType(ctx, want)
}

// ErrNotMaterializable: the principal's key cannot name an entity (its id holds a '/',
// which Electric refuses in a principal key too).
var ErrNotMaterializable = errors.New("entity: this principal has no principal entity (its id contains '/')")

// Materializable reports whether p can have a principal entity.
func Materializable(p principal.Principal) bool {
	return p.Kind != "" && principal.ValidID(p.ID) && !strings.Contains(p.ID, "/")
}

// EnsurePrincipal returns p's principal entity, creating it on first use: spawned by p
// itself (so p may read it and send to it), tagged principal_kind and principal_id, and
// its stream seeded with p's identity.
func (r *Registry) EnsurePrincipal(ctx context.Context, p principal.Principal) (*Entity, error) {
	if !Materializable(p) {
		return nil, ErrNotMaterializable
	}
	url := p.URL()
	if e, err := r.Known(ctx, url); err == nil || !errors.Is(err, ErrNotFound) {
		return e, err
	}
	t, err := r.Type(ctx, entitypath.PrincipalType)
	if errors.Is(err, ErrTypeNotFound) {
		t, err = r.EnsurePrincipalType(ctx) // deleted behind the server's back
	}
	if err != nil {
		return nil, err
	}
	key := p.String()
	var args rawjson.Object
	args.String("kind", p.Kind).String("id", p.ID).String("key", key)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	var identity rawjson.Object
	identity.String("kind", p.Kind).String("id", p.ID).String("key", key).String("url", url).
		String("created_at", now).String("updated_at", now)
	res, err := r.Spawn(ctx, t, SpawnRequest{Type: t.Name, InstanceID: key, Args: args.Bytes(),
		Tags:      map[string]string{"principal_kind": p.Kind, "principal_id": p.ID},
		CreatedBy: url, Initial: [][]byte{IdentityEvent(wire.OpInsert, identity.Bytes(), "")}})
	if errors.Is(err, ErrDuplicate) {
		return r.Get(ctx, url) // another request made it first
	}
	if err != nil {
		return nil, fmt.Errorf("entity: create the principal entity of %s: %w", key, err)
	}
	return res.Entity, nil
}

// IdentityEvent is a principal entity's identity event: op is insert when the entity
// is made and update when an update_identity message replaces it (txid "" for none).
func IdentityEvent(op string, identity json.RawMessage, txid string) []byte {
	return wire.Event{Type: IdentityEventType, Key: identityKey, Value: identity, Operation: op,
		Txid: txid, Timestamp: time.Now()}.Marshal()
}
