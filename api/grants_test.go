package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func grantBody(subjectKind, subject, perm, extra string) string {
	return `{"subject_kind":"` + subjectKind + `","subject_value":"` + subject + `","permission":"` + perm + `"` + extra + `}`
}

// Grants reach descendants only with propagation "descendants", are copied onto children
// when marked so, and can name a kind of principal.
func TestEntityGrantSemantics(t *testing.T) {
	s := startJWT(t)
	const carol = "user:carol"
	s.must(t, carol, "POST", "/_electric/entity-types", `{"name":"doc","description":"d"}`, http.StatusCreated)
	s.must(t, carol, "PUT", "/_electric/entities/doc/p1", `{}`, http.StatusCreated)
	s.must(t, carol, "POST", "/_electric/entities/doc/p1/grants", grantBody("principal", "user:bob", "read", `,"propagation":"descendants"`), http.StatusCreated)
	s.must(t, carol, "POST", "/_electric/entities/doc/p1/grants", grantBody("principal", "user:dan", "read", ""), http.StatusCreated)
	s.must(t, carol, "POST", "/_electric/entities/doc/p1/grants", grantBody("principal", "user:eve", "write", `,"copy_to_children":true`), http.StatusCreated)
	s.must(t, carol, "POST", "/_electric/entities/doc/p1/grants", grantBody("principal_kind", "agent", "read", ""), http.StatusCreated)
	s.must(t, carol, "PUT", "/_electric/entities/doc/c1", `{"parent":"/doc/p1"}`, http.StatusCreated)

	s.must(t, "user:bob", "GET", "/_electric/entities/doc/c1", "", http.StatusOK) // descendants
	s.must(t, "user:dan", "GET", "/_electric/entities/doc/p1", "", http.StatusOK) // self
	s.must(t, "user:dan", "GET", "/_electric/entities/doc/c1", "", http.StatusUnauthorized)
	s.must(t, "agent:bot", "GET", "/_electric/entities/doc/p1", "", http.StatusOK) // a kind
	s.must(t, "user:zed", "GET", "/_electric/entities/doc/p1", "", http.StatusUnauthorized)

	// eve's grant was copied to the child: she may send to it (not read it)
	var copied []map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.must(t, carol, "GET", "/_electric/entities/doc/c1/grants", "", http.StatusOK)), &copied))
	require.Len(t, copied, 1)
	require.Equal(t, "user:eve", copied[0]["subject_value"])
	require.Equal(t, "write", copied[0]["permission"])
	require.Equal(t, true, copied[0]["copy_to_children"])
	s.must(t, "user:eve", "POST", "/_electric/entities/doc/c1/send", `{"payload":"hi"}`, http.StatusOK)
	s.must(t, "user:eve", "GET", "/_electric/entities/doc/c1", "", http.StatusUnauthorized)

	// a spawn's own grants; spawning under a parent needs spawn on the parent
	s.must(t, carol, "PUT", "/_electric/entities/doc/g1", `{"grants":[`+grantBody("principal", "user:gil", "read", "")+`]}`, http.StatusCreated)
	s.must(t, "user:gil", "GET", "/_electric/entities/doc/g1", "", http.StatusOK)
	s.must(t, carol, "POST", "/_electric/entity-types/doc/grants", grantBody("principal", "user:bob", "spawn", ""), http.StatusCreated)
	s.must(t, "user:bob", "PUT", "/_electric/entities/doc/b1", `{}`, http.StatusCreated)
	out := s.must(t, "user:bob", "PUT", "/_electric/entities/doc/b2", `{"parent":"/doc/p1"}`, http.StatusUnauthorized)
	require.Contains(t, out, "not allowed to spawn /doc/p1")

	// revoking takes effect at once
	var grants []map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.must(t, carol, "GET", "/_electric/entities/doc/p1/grants", "", http.StatusOK)), &grants))
	for _, g := range grants {
		if g["subject_value"] == "user:dan" {
			s.must(t, carol, "DELETE", "/_electric/entities/doc/p1/grants/"+g["id"].(string), "", http.StatusNoContent)
		}
	}
	s.must(t, "user:dan", "GET", "/_electric/entities/doc/p1", "", http.StatusUnauthorized)
	s.must(t, carol, "DELETE", "/_electric/entities/doc/p1/grants/g_nope", "", http.StatusNotFound)

	// invalid grants say where
	for body, path := range map[string]string{
		grantBody("principal", "nobody", "read", ""):                                     "/subject_value",
		grantBody("principal_kind", "robot", "read", ""):                                 "/subject_value",
		grantBody("group", "x", "read", ""):                                              "/subject_kind",
		grantBody("principal", "user:x", "own", ""):                                      "/permission",
		grantBody("principal", "user:x", "read", `,"propagation":"up"`):                  "/propagation",
		grantBody("principal", "user:x", "read", `,"expires_at":"2001-01-01T00:00:00Z"`): "/expires_at",
	} {
		out := s.must(t, carol, "POST", "/_electric/entities/doc/p1/grants", body, http.StatusUnprocessableEntity)
		require.Contains(t, out, `"path":"`+path+`"`, body)
	}
	s.must(t, carol, "POST", "/_electric/entities/doc/p1/grants", `{"subject_kind":"principal","extra":1}`, http.StatusBadRequest)
}

// Registering a new name is open; the registrant manages the type; updating needs
// manage; deleting a type drops its grants, so the next registrant of the name starts
// fresh.
func TestTypeGrantSemantics(t *testing.T) {
	s := startJWT(t)
	s.must(t, "user:sam", "POST", "/_electric/entity-types", `{"name":"doc","description":"d",`+
		`"permission_grants":[`+grantBody("principal", "user:pat", "spawn", "")+`]}`, http.StatusCreated)
	s.must(t, "user:mallory", "POST", "/_electric/entity-types", `{"name":"doc","description":"mine now"}`, http.StatusUnauthorized)
	s.must(t, "user:mallory", "PATCH", "/_electric/entity-types/doc/schemas", `{"inbox_schemas":{"x":{"type":"object"}}}`, http.StatusUnauthorized)
	s.must(t, "user:mallory", "PUT", "/_electric/entities/doc/m1", `{}`, http.StatusUnauthorized)
	s.must(t, "user:pat", "PUT", "/_electric/entities/doc/p1", `{}`, http.StatusCreated) // permission_grants
	s.must(t, "user:sam", "POST", "/_electric/entity-types", `{"name":"doc","description":"d2"}`, http.StatusCreated)
	require.Contains(t, s.must(t, "user:pat", "GET", "/_electric/entity-types", "", http.StatusOK), `"doc"`)
	require.Equal(t, "[]", strings.TrimSpace(s.must(t, "user:mallory", "GET", "/_electric/entity-types", "", http.StatusOK)))

	s.must(t, "user:sam", "DELETE", "/_electric/entity-types/doc", "", http.StatusNoContent)
	s.must(t, "user:mallory", "POST", "/_electric/entity-types", `{"name":"doc","description":"fresh"}`, http.StatusCreated)
	s.must(t, "user:sam", "PATCH", "/_electric/entity-types/doc/schemas", `{"inbox_schemas":{"x":{"type":"object"}}}`, http.StatusUnauthorized)
	s.must(t, "user:pat", "PUT", "/_electric/entities/doc/p2", `{}`, http.StatusUnauthorized)

	out := s.must(t, "user:mallory", "POST", "/_electric/entity-types", `{"name":"doc","description":"d",`+
		`"permission_grants":[`+grantBody("principal", "user:x", "read", "")+`]}`, http.StatusUnprocessableEntity)
	require.Contains(t, out, `"path":"/permission_grants/0/permission"`)
}

// Shapes show only the rows the caller may read (entities) or spawn (types).
func TestShapeRowsAreScoped(t *testing.T) {
	s := startJWT(t)
	s.must(t, "user:carol", "POST", "/_electric/entity-types", `{"name":"doc","description":"d"}`, http.StatusCreated)
	s.must(t, "user:carol", "PUT", "/_electric/entities/doc/a", `{}`, http.StatusCreated)
	s.must(t, "user:carol", "PUT", "/_electric/entities/doc/b", `{}`, http.StatusCreated)
	s.must(t, "user:carol", "POST", "/_electric/entities/doc/b/grants", grantBody("principal", "user:rita", "read", ""), http.StatusCreated)
	rows := func(who, table string) []string {
		out := s.must(t, who, "GET", "/_electric/electric/v1/shape?table="+table+"&offset=-1", "", http.StatusOK)
		var msgs []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &msgs))
		var keys []string
		for _, m := range msgs {
			if k, ok := m["key"].(string); ok {
				keys = append(keys, k)
			}
		}
		return keys
	}
	require.Len(t, rows("user:carol", "entities"), 3) // doc/a, doc/b and her principal entity
	require.Equal(t, []string{`"public"."entities"/"/doc/b"`}, rows("user:rita", "entities"))
	require.Empty(t, rows("user:sam", "entities"))
	require.Len(t, rows("user:carol", "entity_types"), 1)
	require.Empty(t, rows("user:rita", "entity_types"))
	s.must(t, "", "GET", "/_electric/electric/v1/shape?table=entities&offset=-1", "", http.StatusUnauthorized)
}
