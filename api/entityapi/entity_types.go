package entityapi

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/internal/validation"
	"github.com/entityd/entityd/slashcmd"
)

var typeFields = []string{"name", "description", "creation_schema", "inbox_schemas", "state_schemas",
	"slash_commands", "serve_endpoint", "default_dispatch_policy", "permission_grants",
	"externally_writable_collections"}

// registerType is POST /_electric/entity-types: register or replace a type (an upsert
// that bumps the revision).
func (s *handlers) registerType(w http.ResponseWriter, r *http.Request) error {
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	if wantsDiscovery(b) {
		b.Only(typeFields...)
		name, hasName := b.Str("name")
		endpoint, _ := b.Str("serve_endpoint")
		b.MaxLen("serve_endpoint", endpoint, maxURLLength)
		if err := b.Fail(); err != nil {
			return err
		}
		if !hasName {
			return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Missing required field: name")
		}
		if err := checkTypeName(name); err != nil {
			return err
		}
		if _, err := s.mayRegister(r, name); err != nil {
			return err
		}
		if b, err = s.discoverManifest(r.Context(), name, endpoint); err != nil {
			return err
		}
	}
	b.Only(typeFields...)
	name, hasName := b.Str("name")
	description, hasDescription := b.Text("description")
	t := &entity.Type{
		Name:                          name,
		Description:                   description,
		CreationSchema:                b.Object("creation_schema"),
		InboxSchemas:                  schemaMap(b, "inbox_schemas"),
		StateSchemas:                  schemaMap(b, "state_schemas"),
		DefaultDispatchPolicy:         b.Object("default_dispatch_policy"),
		ExternallyWritableCollections: b.Object("externally_writable_collections"),
	}
	if v, ok := b.Str("serve_endpoint"); ok {
		b.MaxLen("serve_endpoint", v, maxURLLength)
		t.ServeEndpoint = &v
	}
	var typeGrants []authz.GrantRequest
	if raw := b.Raw("permission_grants"); raw != nil && jsonbody.Kind(raw) != 'a' {
		b.Details.Add("/permission_grants", "must be array")
	} else if raw != nil && json.Unmarshal(raw, &typeGrants) != nil {
		b.Details.Add("/permission_grants", "must be an array of grants")
	}
	if raw := b.Raw("slash_commands"); raw != nil && jsonbody.Kind(raw) != 'n' {
		b.Details = append(b.Details, slashcmd.CheckShape(raw, "/slash_commands")...)
		t.SlashCommands = raw
	}
	if err := b.Fail(); err != nil {
		return err
	}
	if err := checkWritableCollections(t.ExternallyWritableCollections); err != nil {
		return err
	}
	if !hasName {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Missing required field: name")
	}
	if err := checkTypeName(name); err != nil {
		return err
	}
	if !hasDescription {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Missing required field: description")
	}
	isNew, err := s.mayRegister(r, name)
	if err != nil {
		return err
	}
	if isNew {
		if err := s.quotas.typ(r.Context(), api.Caller(r)); err != nil {
			return err
		}
	}
	if err := s.kit.GrantQuota(r, api.Caller(r), len(typeGrants)); err != nil {
		return err
	}
	if err := authz.CheckTypeGrants(typeGrants); err != nil {
		return api.GrantError(err)
	}
	if d := checkSchemaKeywords(t); d != nil {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Schema uses disallowed keywords").WithDetails(d)
	}
	if d := slashcmd.ValidateDefinitions(t.SlashCommands, "/slash_commands", slashcmd.DefaultLimits); d != nil {
		return httpx.New(http.StatusUnprocessableEntity, api.CodeSchemaValidationFailed, "Validation failed").WithDetails(d)
	}
	targets, err := t.DispatchTargets()
	if err != nil {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, err.Error())
	}
	for _, tg := range targets {
		if tg.RunnerID != "" {
			continue // a runner pulls its work: nothing is called
		}
		if why := s.cfg.Outbound.CheckURL(tg.URL, "dispatch target url"); why != "" {
			return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, why)
		}
	}
	if err := s.registry.Precompile(t); err != nil {
		return schemaCompileError(err)
	}
	t.RegisteredBy = api.Caller(r).String() // kept by the type when it exists already
	out, err := s.registry.RegisterType(r.Context(), t)
	if err != nil {
		return err
	}
	if err := s.grants.TypeRegistered(r.Context(), name, api.Caller(r), isNew, typeGrants); err != nil {
		return err
	}
	writeType(w, http.StatusCreated, out)
	return nil
}

// schemaMap reads a member that maps names to JSON Schemas.
func schemaMap(b *jsonbody.Body, name string) json.RawMessage {
	v := b.Object(name)
	if v == nil {
		return nil
	}
	// The names are message or event types, identifiers; the schemas are content.
	if d := textpolicy.CheckKeys(v, validation.Pointer(name)); len(d) > 0 {
		b.Details = append(b.Details, d...)
		return nil
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(v, &m)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if jsonbody.Kind(m[k]) != 'o' {
			b.Details.Add(validation.Pointer(name, k), "must be object")
		}
	}
	return v
}

func checkSchemaKeywords(t *entity.Type) validation.Details {
	var d validation.Details
	if t.CreationSchema != nil {
		d = append(d, schemas.CheckKeywords(t.CreationSchema, "/creation_schema")...)
	}
	for _, m := range []struct {
		name string
		raw  json.RawMessage
	}{{"inbox_schemas", t.InboxSchemas}, {"state_schemas", t.StateSchemas}} {
		if m.raw == nil {
			continue
		}
		var all map[string]json.RawMessage
		_ = json.Unmarshal(m.raw, &all)
		for _, k := range slices.Sorted(maps.Keys(all)) {
			d = append(d, schemas.CheckKeywords(all[k], validation.Pointer(m.name, k))...)
		}
	}
	return d
}

func schemaCompileError(err error) error {
	var ce *entity.SchemaCompileError
	path := "/creation_schema"
	if errors.As(err, &ce) {
		path = validation.Pointer(ce.Field, ce.Key)
	}
	return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Invalid JSON Schema").
		WithDetails(validation.Details{{Path: path, Message: err.Error()}})
}

// checkTypeName keeps type names usable as the first segment of entity URLs.
func checkTypeName(name string) error {
	switch {
	case name == "":
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Missing required field: name")
	case name == "principal":
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "The entity type name \"principal\" is reserved")
	case name[0] == '_':
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Entity type names must not start with \"_\"")
	case name == "v1":
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "The entity type name \"v1\" is reserved for /v1/stream")
	case !validSegment(name, 64):
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
			"Entity type names must be 1-64 characters of letters, digits, '-', '_' and '.'")
	}
	return nil
}

// validSegment reports whether s is a safe URL path segment: ASCII letters, digits,
// '-', '_', '.', ':' and '@', not "." or "..", at most max bytes.
func validSegment(s string, max int) bool {
	if s == "" || len(s) > max || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':' || c == '@') {
			return false
		}
	}
	return true
}

func (s *handlers) listTypes(w http.ResponseWriter, r *http.Request) error {
	types, err := s.registry.Types(r.Context())
	if err != nil {
		return err
	}
	maySpawn, err := s.checker.TypeFilter(r.Context(), api.Caller(r), authz.Spawn)
	if err != nil {
		return err
	}
	body := []byte{'['}
	for _, t := range types {
		// the built-in principal type is spawned by nobody (GET /entity-types/principal
		// still shows it)
		if !maySpawn(t.Name) || t.Name == entitypath.PrincipalType {
			continue
		}
		if len(body) > 1 {
			body = append(body, ',')
		}
		b, _ := t.MarshalJSON()
		body = append(body, b...)
	}
	writeRawJSON(w, http.StatusOK, append(body, ']'))
	return nil
}

// writeType writes the type JSON. It does not go through json.Marshal, which compacts
// and HTML-escapes what MarshalJSON returns: schemas must come back byte for byte as
// they were registered.
func writeType(w http.ResponseWriter, status int, t *entity.Type) {
	b, _ := t.MarshalJSON()
	writeRawJSON(w, status, b)
}

func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// typeError answers a type lookup's failure (404 for an unknown type).
func typeError(err error, name string) error {
	if errors.Is(err, entity.ErrTypeNotFound) {
		return httpx.New(http.StatusNotFound, api.CodeNotFound, "Entity type not found: "+name)
	}
	return err
}

// mayRegister is the register rule: a new name is open to any principal, an existing
// type needs manage. isNew tells which.
func (s *handlers) mayRegister(r *http.Request, name string) (isNew bool, err error) {
	_, err = s.registry.Type(r.Context(), name)
	if errors.Is(err, entity.ErrTypeNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, s.kit.RequireType(r, api.Caller(r), name, authz.Manage)
}

func (s *handlers) getType(w http.ResponseWriter, r *http.Request) error {
	t, err := s.registry.Type(r.Context(), api.Param(r, "name"))
	if errors.Is(err, entity.ErrTypeNotFound) {
		return httpx.New(http.StatusNotFound, api.CodeNotFound, "Entity type not found: "+api.Param(r, "name"))
	}
	if err != nil {
		return err
	}
	writeType(w, http.StatusOK, t)
	return nil
}

func (s *handlers) deleteType(w http.ResponseWriter, r *http.Request) error {
	if err := refusePrincipalType(api.Param(r, "name"), "deleted"); err != nil {
		return err
	}
	err := s.registry.DeleteType(r.Context(), api.Param(r, "name"))
	if err != nil {
		return typeError(err, api.Param(r, "name"))
	}
	if err := s.grants.TypeDeleted(r.Context(), api.Param(r, "name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// amendSchemas is PATCH /_electric/entity-types/:name/schemas: add message schemas.
func (s *handlers) amendSchemas(w http.ResponseWriter, r *http.Request) error {
	if err := refusePrincipalType(api.Param(r, "name"), "amended"); err != nil {
		return err
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	b.Only("inbox_schemas", "state_schemas")
	inboxRaw, stateRaw := schemaMap(b, "inbox_schemas"), schemaMap(b, "state_schemas")
	if err := b.Fail(); err != nil {
		return err
	}
	probe := &entity.Type{Name: api.Param(r, "name"), InboxSchemas: inboxRaw, StateSchemas: stateRaw}
	if d := checkSchemaKeywords(probe); d != nil {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Schema uses disallowed keywords").WithDetails(d)
	}
	if err := s.registry.Precompile(probe); err != nil {
		return schemaCompileError(err)
	}
	var inbox, state map[string]json.RawMessage
	_ = json.Unmarshal(orNull(inboxRaw), &inbox)
	_ = json.Unmarshal(orNull(stateRaw), &state)
	t, err := s.registry.AmendSchemas(r.Context(), probe.Name, inbox, state)
	var exists *entity.SchemaKeyExistsError
	switch {
	case errors.Is(err, entity.ErrTypeNotFound):
		return httpx.New(http.StatusNotFound, api.CodeNotFound, "Entity type not found: "+probe.Name)
	case errors.As(err, &exists):
		return httpx.New(http.StatusConflict, CodeSchemaKeyExists, "Schema key already exists: "+exists.Key)
	case err != nil:
		return err
	}
	writeType(w, http.StatusOK, t)
	return nil
}

func orNull(r json.RawMessage) json.RawMessage {
	if r == nil {
		return json.RawMessage("null")
	}
	return r
}
