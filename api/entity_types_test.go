package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEntityTypeRegister(t *testing.T) {
	h := setup(t)

	first := h.registerType(`{"name":"chat","description":"first"}`)
	require.ElementsMatch(t, []string{"name", "description", "creation_schema", "inbox_schemas", "state_schemas",
		"revision", "created_at", "updated_at"}, keys(first))
	require.Equal(t, "chat", str(t, first["name"]))
	require.Equal(t, "first", str(t, first["description"]))
	require.Equal(t, int64(1), integer(t, first["revision"]))
	for _, k := range []string{"creation_schema", "inbox_schemas", "state_schemas"} {
		require.Equal(t, "null", string(first[k]), k)
	}
	created := requireISOTime(t, first["created_at"])
	requireISOTime(t, first["updated_at"])

	// Registering again is an upsert that bumps the revision.
	second := h.registerType(`{"name":"chat","description":"second"}`)
	require.Equal(t, int64(2), integer(t, second["revision"]))
	require.Equal(t, "second", str(t, second["description"]))
	require.Equal(t, created, requireISOTime(t, second["created_at"]), "created_at survives a re-registration")
	require.False(t, requireISOTime(t, second["updated_at"]).Before(created))

	r := h.do(http.MethodGet, typesPath+"/chat", nil)
	requireStatus(t, r, http.StatusOK)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	got := r.object(t)
	require.Equal(t, int64(2), integer(t, got["revision"]))
	require.Equal(t, "second", str(t, got["description"]))
}

func TestEntityTypeListOrderedByName(t *testing.T) {
	h := setup(t)

	r := h.do(http.MethodGet, typesPath, nil)
	requireStatus(t, r, http.StatusOK)
	require.JSONEq(t, `[]`, string(r.Body), "an empty list is [], not null")

	for _, name := range []string{"zeta", "alpha", "mid"} {
		h.registerType(`{"name":"` + name + `","description":"d"}`)
	}
	r = h.do(http.MethodGet, typesPath, nil)
	requireStatus(t, r, http.StatusOK)
	var list []map[string]json.RawMessage
	r.decode(t, &list)
	var names []string
	for _, ty := range list {
		names = append(names, str(t, ty["name"]))
		require.Equal(t, int64(1), integer(t, ty["revision"]))
	}
	require.Equal(t, []string{"alpha", "mid", "zeta"}, names)
}

func TestEntityTypeGetAndDelete(t *testing.T) {
	h := setup(t)

	requireError(t, h.do(http.MethodGet, typesPath+"/nope", nil), http.StatusNotFound, "NOT_FOUND",
		"Entity type not found: nope")
	requireError(t, h.do(http.MethodDelete, typesPath+"/nope", nil), http.StatusNotFound, "NOT_FOUND",
		"Entity type not found: nope")

	h.registerType(`{"name":"chat","description":"d"}`)
	requireStatus(t, h.do(http.MethodGet, typesPath+"/chat", nil), http.StatusOK)

	r := h.do(http.MethodDelete, typesPath+"/chat", nil)
	requireStatus(t, r, http.StatusNoContent)
	require.Empty(t, r.Body)

	requireError(t, h.do(http.MethodGet, typesPath+"/chat", nil), http.StatusNotFound, "NOT_FOUND",
		"Entity type not found: chat")
	requireError(t, h.do(http.MethodDelete, typesPath+"/chat", nil), http.StatusNotFound, "NOT_FOUND",
		"Entity type not found: chat")
	r = h.do(http.MethodGet, typesPath, nil)
	require.JSONEq(t, `[]`, string(r.Body))

	// The name is free again.
	again := h.registerType(`{"name":"chat","description":"d"}`)
	require.Equal(t, int64(1), integer(t, again["revision"]))
}

func TestEntityTypeRegisterRejects(t *testing.T) {
	h := setup(t)
	const invalid = "INVALID_REQUEST"

	t.Run("unknown top-level field", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"chat","description":"d","bogus":1}`)
		requireSchemaMismatch(t, r, detail{"/bogus", "must NOT have additional properties"})
	})
	t.Run("body not an object", func(t *testing.T) {
		requireSchemaMismatch(t, h.do(http.MethodPost, typesPath, `[1]`), detail{"/", "must be object"})
	})
	t.Run("invalid JSON", func(t *testing.T) {
		requireError(t, h.do(http.MethodPost, typesPath, `{"name":`), http.StatusBadRequest, invalid, "Invalid JSON body")
	})
	t.Run("name not a string", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":5,"description":"d"}`)
		requireSchemaMismatch(t, r, detail{"/name", "must be string"})
	})
	t.Run("missing name", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"description":"d"}`)
		e := requireError(t, r, http.StatusBadRequest, invalid, "Missing required field: name")
		require.Empty(t, e.Details)
	})
	t.Run("empty body counts as {}", func(t *testing.T) {
		requireError(t, h.do(http.MethodPost, typesPath, ``), http.StatusBadRequest, invalid, "Missing required field: name")
	})
	t.Run("principal is reserved", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"principal","description":"d"}`)
		requireError(t, r, http.StatusBadRequest, invalid, `The entity type name "principal" is reserved`)
	})
	t.Run("underscore names are reserved", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"_x","description":"d"}`)
		requireError(t, r, http.StatusBadRequest, invalid, `Entity type names must not start with "_"`)
	})
	t.Run("missing description", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"chat"}`)
		requireError(t, r, http.StatusBadRequest, invalid, "Missing required field: description")
	})
	t.Run("disallowed keyword nested under properties", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"chat","description":"d","inbox_schemas":{"msg":{
			"type":"object","properties":{"x":{"type":"object","patternProperties":{"^a":{"type":"string"}}}}}}}`)
		requireDetails(t, r, http.StatusBadRequest, invalid, "Schema uses disallowed keywords",
			detail{"/inbox_schemas/msg/properties/x/patternProperties", `keyword "patternProperties" is not allowed`})
	})
	t.Run("disallowed keywords in several schemas", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"chat","description":"d",
			"creation_schema":{"type":"object","if":{"type":"object"}},
			"state_schemas":{"s":{"items":{"uniqueItems":true}}}}`)
		requireDetails(t, r, http.StatusBadRequest, invalid, "Schema uses disallowed keywords",
			detail{"/creation_schema/if", `keyword "if" is not allowed`},
			detail{"/state_schemas/s/items/uniqueItems", `keyword "uniqueItems" is not allowed`})
	})
	t.Run("slash command with a bad name", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"chat","description":"d","slash_commands":[{"name":"QuickStart"}]}`)
		requireValidationFailed(t, r, detail{"/slash_commands/0/name", "must be a lowercase kebab-case command name"})
	})
	t.Run("slash command with an extra key", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"chat","description":"d","slash_commands":[{"name":"ok","bogus":true}]}`)
		requireSchemaMismatch(t, r, detail{"/slash_commands/0/bogus", "must NOT have additional properties"})
	})
	t.Run("schema that does not compile", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"chat","description":"d",
			"creation_schema":{"type":"object","properties":{"x":{"type":"string","pattern":"(unclosed"}}}}`)
		e := requireError(t, r, http.StatusBadRequest, invalid, "Invalid JSON Schema")
		require.Len(t, e.Details, 1)
		require.Equal(t, "/creation_schema", e.Details[0].Path)
		require.NotEmpty(t, e.Details[0].Message)
	})
	t.Run("inbox schema that does not compile names its key", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"chat","description":"d",
			"inbox_schemas":{"ok":{"type":"object"},"bad":{"type":"string","pattern":"["}}}`)
		e := requireError(t, r, http.StatusBadRequest, invalid, "Invalid JSON Schema")
		require.Len(t, e.Details, 1)
		require.Equal(t, "/inbox_schemas/bad", e.Details[0].Path)
	})
	t.Run("state schema that does not compile names its key", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"chat","description":"d",
			"state_schemas":{"a/b":{"type":"nonsense"}}}`)
		e := requireError(t, r, http.StatusBadRequest, invalid, "Invalid JSON Schema")
		require.Len(t, e.Details, 1)
		require.Equal(t, "/state_schemas/a~1b", e.Details[0].Path)
	})
	t.Run("schema map member not an object", func(t *testing.T) {
		r := h.do(http.MethodPost, typesPath, `{"name":"chat","description":"d","inbox_schemas":{"m":5}}`)
		requireSchemaMismatch(t, r, detail{"/inbox_schemas/m", "must be object"})
	})

	// Nothing of the above was registered.
	r := h.do(http.MethodGet, typesPath, nil)
	requireStatus(t, r, http.StatusOK)
	require.JSONEq(t, `[]`, string(r.Body))
}

func TestEntityTypeKeepsSchemasByteForByte(t *testing.T) {
	h := setup(t)

	// Key order, whitespace and number spelling as a client sent them.
	const creation = `{ "type" : "object",  "properties": {"zeta": {"type":"integer", "maximum": 1e3}, "alpha":{"type":"string"}},"required":["zeta"] }`
	const msg = `{"type":"object",
		"properties":{"b":{"type":"string"},"a":{"type":"number"}}}`
	const inbox = `{ "msg" : ` + msg + ` }`
	const state = `{"s2":{"type":"object"},"s1":{"description":"ünïcödé <b>&amp; \u00e9"}}`
	const commands = `[ {"name":"pr-review", "description":"Review", "arguments":[{"type":"number","name":"number","required":true}]} ]`
	body := `{"name":"chat","description":"d","creation_schema":` + creation + `,"inbox_schemas":` + inbox +
		`,"state_schemas":` + state + `,"slash_commands":` + commands + `}`

	check := func(ty map[string]json.RawMessage) {
		t.Helper()
		require.Equal(t, creation, string(ty["creation_schema"]))
		require.Equal(t, inbox, string(ty["inbox_schemas"]))
		require.Equal(t, state, string(ty["state_schemas"]))
		require.Equal(t, commands, string(ty["slash_commands"]))
	}
	check(h.registerType(body))

	r := h.do(http.MethodGet, typesPath+"/chat", nil)
	requireStatus(t, r, http.StatusOK)
	check(r.object(t))

	r = h.do(http.MethodGet, typesPath, nil)
	var list []map[string]json.RawMessage
	r.decode(t, &list)
	require.Len(t, list, 1)
	check(list[0])

	// An amendment keeps the bytes of the schemas that were there.
	r = h.do(http.MethodPatch, typesPath+"/chat/schemas", `{"inbox_schemas":{"other":{"type":"string"}}}`)
	requireStatus(t, r, http.StatusOK)
	amended := r.object(t)
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(amended["inbox_schemas"], &members))
	require.Equal(t, msg, string(members["msg"]))
	require.Equal(t, `{"type":"string"}`, string(members["other"]))
	require.Equal(t, creation, string(amended["creation_schema"]))
	require.Equal(t, state, string(amended["state_schemas"]))
	require.Equal(t, commands, string(amended["slash_commands"]), "amending schemas keeps slash_commands")
}

func TestEntityTypeAmendSchemas(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d","inbox_schemas":{"a":{"type":"string"}},
		"externally_writable_collections":{"notes":{"type":"state:notes"}}}`)

	r := h.do(http.MethodPatch, typesPath+"/chat/schemas",
		`{"inbox_schemas":{"b":{"type":"number"}},"state_schemas":{"s":{"type":"object"}}}`)
	requireStatus(t, r, http.StatusOK)
	got := r.object(t)
	require.Equal(t, int64(2), integer(t, got["revision"]))
	require.JSONEq(t, `{"a":{"type":"string"},"b":{"type":"number"}}`, string(got["inbox_schemas"]))
	require.JSONEq(t, `{"s":{"type":"object"}}`, string(got["state_schemas"]))
	require.JSONEq(t, `{"notes":{"type":"state:notes"}}`, string(got["externally_writable_collections"]),
		"entityd keeps externally_writable_collections (the reference clears them: a quirk)")

	t.Run("existing key", func(t *testing.T) {
		r := h.do(http.MethodPatch, typesPath+"/chat/schemas", `{"inbox_schemas":{"c":{"type":"string"},"a":{"type":"number"}}}`)
		requireError(t, r, http.StatusConflict, "SCHEMA_KEY_EXISTS", "Schema key already exists: a")
	})
	t.Run("existing state key", func(t *testing.T) {
		r := h.do(http.MethodPatch, typesPath+"/chat/schemas", `{"state_schemas":{"s":{"type":"string"}}}`)
		requireError(t, r, http.StatusConflict, "SCHEMA_KEY_EXISTS", "Schema key already exists: s")
	})
	t.Run("unknown type", func(t *testing.T) {
		r := h.do(http.MethodPatch, typesPath+"/nope/schemas", `{"inbox_schemas":{"x":{"type":"string"}}}`)
		requireError(t, r, http.StatusNotFound, "NOT_FOUND", "Entity type not found: nope")
	})
	t.Run("unknown field", func(t *testing.T) {
		r := h.do(http.MethodPatch, typesPath+"/chat/schemas", `{"description":"x"}`)
		requireSchemaMismatch(t, r, detail{"/description", "must NOT have additional properties"})
	})
	t.Run("disallowed keyword", func(t *testing.T) {
		r := h.do(http.MethodPatch, typesPath+"/chat/schemas", `{"inbox_schemas":{"x":{"propertyNames":{}}}}`)
		requireDetails(t, r, http.StatusBadRequest, "INVALID_REQUEST", "Schema uses disallowed keywords",
			detail{"/inbox_schemas/x/propertyNames", `keyword "propertyNames" is not allowed`})
	})

	// None of the refused amendments changed the type.
	r = h.do(http.MethodGet, typesPath+"/chat", nil)
	requireStatus(t, r, http.StatusOK)
	got = r.object(t)
	require.Equal(t, int64(2), integer(t, got["revision"]))
	require.JSONEq(t, `{"a":{"type":"string"},"b":{"type":"number"}}`, string(got["inbox_schemas"]))
	require.JSONEq(t, `{"s":{"type":"object"}}`, string(got["state_schemas"]))
}
