package entity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/rawjson"
)

// Type is a registered entity type. Schema fields hold the JSON exactly as registered
// (nil when absent).
type Type struct {
	Name                          string
	Description                   string
	CreationSchema                json.RawMessage
	InboxSchemas                  json.RawMessage // object: message type -> JSON Schema
	StateSchemas                  json.RawMessage // object: event type -> JSON Schema
	SlashCommands                 json.RawMessage // array of slash-command definitions
	ServeEndpoint                 *string
	DefaultDispatchPolicy         json.RawMessage
	ExternallyWritableCollections json.RawMessage
	Revision                      int
	// RegisteredBy is the principal that registered the type first ("" for the
	// server's own types): the runners it names are bound to it unless a target names
	// another owner.
	RegisteredBy string
	CreatedAt    time.Time
	UpdatedAt    time.Time

	inbox compiledSchemas
	state compiledSchemas
}

// MarshalJSON renders the public type JSON. Schemas are embedded verbatim; absent
// schema fields are null, absent optional fields are omitted.
func (t *Type) MarshalJSON() ([]byte, error) {
	var o rawjson.Object
	o.String("name", t.Name).String("description", t.Description)
	rawOrNull(&o, "creation_schema", t.CreationSchema)
	rawOrNull(&o, "inbox_schemas", t.InboxSchemas)
	rawOrNull(&o, "state_schemas", t.StateSchemas)
	if t.ExternallyWritableCollections != nil {
		o.Raw("externally_writable_collections", t.ExternallyWritableCollections)
	}
	if t.SlashCommands != nil {
		o.Raw("slash_commands", t.SlashCommands)
	}
	if t.ServeEndpoint != nil {
		o.String("serve_endpoint", *t.ServeEndpoint)
	}
	if t.DefaultDispatchPolicy != nil {
		o.Raw("default_dispatch_policy", t.DefaultDispatchPolicy)
	}
	o.Int("revision", int64(t.Revision))
	o.Time("created_at", t.CreatedAt).Time("updated_at", t.UpdatedAt)
	return o.Bytes(), nil
}

func rawOrNull(o *rawjson.Object, k string, v json.RawMessage) {
	if v == nil {
		o.Null(k)
	} else {
		o.Raw(k, v)
	}
}

// InboxSchema returns the schema declared for msgType, and whether the type declares
// inbox schemas at all (an empty object counts as declared).
func (t *Type) InboxSchema(msgType string) (schema json.RawMessage, declared bool) {
	return schemaFor(t.InboxSchemas, msgType)
}

func schemaFor(schemas json.RawMessage, key string) (json.RawMessage, bool) {
	if schemas == nil {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(schemas, &m) != nil {
		return nil, false
	}
	return m[key], true
}

// scanType reads the columns of the "typeColumns" fragment (queries/types.sql), in order.
func scanType(row pgx.Row) (*Type, error) {
	t := &Type{}
	var cs, is, ss, sc, ddp, ewc []byte
	err := row.Scan(&t.Name, &t.Description, &cs, &is, &ss, &sc, &t.ServeEndpoint, &ddp, &ewc,
		&t.Revision, &t.CreatedAt, &t.UpdatedAt, &t.RegisteredBy)
	if err != nil {
		return nil, err
	}
	t.CreationSchema, t.InboxSchemas, t.StateSchemas = raw(cs), raw(is), raw(ss)
	t.SlashCommands, t.DefaultDispatchPolicy, t.ExternallyWritableCollections = raw(sc), raw(ddp), raw(ewc)
	return t, nil
}

func raw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

func nullable(r json.RawMessage) any {
	if r == nil {
		return nil
	}
	return string(r)
}

// RegisterType creates the type or replaces its definition (an upsert); the revision
// goes up by one on every registration. t.RegisteredBy is recorded when the type is
// created and kept by later registrations.
func (r *Registry) RegisterType(ctx context.Context, t *Type) (*Type, error) {
	out, err := scanType(r.pool.QueryRow(ctx, sqlUpsertType,
		t.Name, t.Description, nullable(t.CreationSchema), nullable(t.InboxSchemas), nullable(t.StateSchemas),
		nullable(t.SlashCommands), t.ServeEndpoint, nullable(t.DefaultDispatchPolicy), nullable(t.ExternallyWritableCollections),
		t.RegisteredBy))
	if err != nil {
		return nil, fmt.Errorf("entity: register type: %w", err)
	}
	r.types.put(out)
	if _, err := r.reconcileCommands(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Type returns a registered type (from a short-lived cache; see typeCache).
func (r *Registry) Type(ctx context.Context, name string) (*Type, error) {
	if t, ok := r.types.get(name); ok {
		if t == nil {
			return nil, ErrTypeNotFound
		}
		return t, nil
	}
	t, err := r.loadType(ctx, name)
	if errors.Is(err, ErrTypeNotFound) {
		r.types.putMissing(name)
	}
	return t, err
}

// TypeFresh reads a type from the database, bypassing the cache.
func (r *Registry) loadType(ctx context.Context, name string) (*Type, error) {
	t, err := scanType(r.pool.QueryRow(ctx, sqlSelectType, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrTypeNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("entity: read type: %w", err)
	}
	r.types.put(t)
	return t, nil
}

// Types lists the registered types ordered by name.
func (r *Registry) Types(ctx context.Context) ([]*Type, error) {
	rows, err := r.pool.Query(ctx, sqlSelectTypes)
	if err != nil {
		return nil, fmt.Errorf("entity: list types: %w", err)
	}
	defer rows.Close()
	out := []*Type{}
	for rows.Next() {
		t, err := scanType(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// DeleteType removes a type. Entities of the type keep working with the schemas they
// were spawned with.
func (r *Registry) DeleteType(ctx context.Context, name string) error {
	tag, err := r.pool.Exec(ctx, sqlDeleteType, name)
	if err != nil {
		return fmt.Errorf("entity: delete type: %w", err)
	}
	r.types.putMissing(name)
	if tag.RowsAffected() == 0 {
		return ErrTypeNotFound
	}
	return nil
}

// AmendSchemas adds inbox and state schemas to a type. It is additive only: a key that
// already exists is refused with SchemaKeyExistsError and nothing changes.
func (r *Registry) AmendSchemas(ctx context.Context, name string, inbox, state map[string]json.RawMessage) (*Type, error) {
	var out *Type
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		t, err := scanType(tx.QueryRow(ctx, sqlLockType, name))
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrTypeNotFound
		}
		if err != nil {
			return err
		}
		newInbox, err := mergeSchemas(t.InboxSchemas, inbox)
		if err != nil {
			return err
		}
		newState, err := mergeSchemas(t.StateSchemas, state)
		if err != nil {
			return err
		}
		out, err = scanType(tx.QueryRow(ctx, sqlSetTypeSchemas,
			name, nullable(newInbox), nullable(newState)))
		return err
	})
	if err != nil {
		return nil, err
	}
	r.types.put(out)
	return out, nil
}

// mergeSchemas adds the keys of add to the schema object cur, keeping cur's bytes for
// existing members. Keys are added in sorted order so the result is deterministic.
func mergeSchemas(cur json.RawMessage, add map[string]json.RawMessage) (json.RawMessage, error) {
	if len(add) == 0 {
		return cur, nil
	}
	var order []string
	var existing map[string][]byte
	if cur != nil {
		var err error
		if order, existing, err = rawjson.Ordered(cur); err != nil {
			return nil, err
		}
	}
	var o rawjson.Object
	for _, k := range order {
		o.Raw(k, existing[k])
	}
	for _, k := range slices.Sorted(maps.Keys(add)) {
		if _, ok := existing[k]; ok {
			return nil, &SchemaKeyExistsError{Key: k}
		}
		o.Raw(k, add[k])
	}
	return o.Bytes(), nil
}

// CountRegisteredBy is how many types p registered, counted up to limit (for quotas).
func (r *Registry) CountRegisteredBy(ctx context.Context, p string, limit int) (int, error) {
	var n int
	err := r.pool.QueryRow(ctx, sqlCountTypesRegisteredBy, p, limit).Scan(&n)
	return n, err
}
