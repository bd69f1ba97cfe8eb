package shapes_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEntityTypesShapeCarriesWritableCollections: the entity_types shape has the type's
// externally_writable_collections, which Electric's web UI reads to offer an entity's
// Comments view (a type without any has null there).
func TestEntityTypesShapeCarriesWritableCollections(t *testing.T) {
	e := start(t)
	e.mustStatus(e.do("POST", "/_electric/entity-types", `{"name":"review","description":"d",
		"state_schemas":{"state:comments":{"type":"object"}},
		"externally_writable_collections":{"comments":{"type":"state:comments","contract":"comments/v1","operations":["insert"]}}}`),
		http.StatusCreated)
	e.mustStatus(e.do("POST", "/_electric/entity-types", `{"name":"plain","description":"d"}`), http.StatusCreated)
	r := e.shape(url.Values{"table": {"entity_types"}, "offset": {"-1"}})
	e.mustStatus(r, http.StatusOK)
	require.Contains(t, r.header.Get("electric-schema"), `"externally_writable_collections":{"type":"json"}`)
	rows := map[string]map[string]any{}
	apply(rows, r.msgs)
	got, ok := rows[`"public"."entity_types"/"review"`]["externally_writable_collections"].(string)
	require.True(t, ok, "%v", rows)
	require.JSONEq(t, `{"comments":{"type":"state:comments","contract":"comments/v1","operations":["insert"]}}`, got)
	require.Nil(t, rows[`"public"."entity_types"/"plain"`]["externally_writable_collections"])
}
