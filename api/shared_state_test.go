package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSharedState: /_electric/shared-state/<id> is a Durable Stream under the rule of
// the entities linked to it: the runtime's PUT with electric-owner-entity creates it and
// links it to the owner entity, its principals read and append; another principal
// cannot read, append, link it to its own entity, or create shared state for an entity
// it cannot write; only privileged principals delete it.
func TestSharedState(t *testing.T) {
	h := setup(t, testserverQuiet())
	const alice, bob = "Electric-Principal", "Electric-Principal"
	h.do(http.MethodPost, typesPath, `{"name":"doc","description":"d"}`, alice, "user:alice")
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/doc/a", `{}`, alice, "user:alice"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPost, typesPath+"/doc/grants",
		`{"subject_kind":"principal","subject_value":"user:bob","permission":"spawn"}`, alice, "user:alice"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/doc/b", `{}`, bob, "user:bob"), http.StatusCreated)
	const path = "/_electric/shared-state/board"

	// no owner entity: nobody's shared state
	requireStatus(t, h.do(http.MethodPut, path, nil, alice, "user:alice", "Content-Type", "application/json"), http.StatusForbidden)
	// bob cannot make shared state for alice's entity
	requireStatus(t, h.do(http.MethodPut, path, nil, bob, "user:bob", "Content-Type", "application/json",
		"Electric-Owner-Entity", "/doc/a"), http.StatusForbidden)

	r := h.do(http.MethodPut, path, nil, alice, "user:alice", "Content-Type", "application/json", "Electric-Owner-Entity", "/doc/a")
	requireStatus(t, r, http.StatusCreated)
	// the runtime's ensure is idempotent (200 for the same configuration)
	requireStatus(t, h.do(http.MethodPut, path, nil, alice, "user:alice", "Content-Type", "application/json",
		"Electric-Owner-Entity", "/doc/a"), http.StatusOK)
	r = h.do(http.MethodPost, path, `{"type":"shared:note","key":"n1","value":{"text":"hi"},"headers":{"operation":"insert"}}`,
		alice, "user:alice", "Producer-Id", "shared-state-/doc/a-board", "Producer-Epoch", "0", "Producer-Seq", "0")
	require.Less(t, r.Status, 300, string(r.Body))

	r = h.do(http.MethodGet, path+"?offset=-1", nil, alice, "user:alice")
	requireStatus(t, r, http.StatusOK)
	evs := parseEvents(t, r.Body)
	require.Len(t, evs, 1)
	require.Equal(t, "n1", evs[0].Key)
	requireStatus(t, h.do(http.MethodHead, path, nil, alice, "user:alice"), http.StatusOK)

	// bob: nothing, even naming his own entity as the owner of alice's shared state
	requireStatus(t, h.do(http.MethodGet, path+"?offset=-1", nil, bob, "user:bob"), http.StatusForbidden)
	requireStatus(t, h.do(http.MethodHead, path, nil, bob, "user:bob"), http.StatusForbidden)
	requireStatus(t, h.do(http.MethodPost, path, `{"type":"x","key":"k","headers":{"operation":"insert"}}`, bob, "user:bob"), http.StatusForbidden)
	requireStatus(t, h.do(http.MethodGet, path+"?offset=-1", nil, bob, "user:bob"), http.StatusForbidden)
	requireStatus(t, h.do(http.MethodDelete, path, nil, bob, "user:bob"), http.StatusForbidden)
	requireStatus(t, h.do(http.MethodDelete, path, nil, alice, "user:alice"), http.StatusForbidden)

	// a read grant on the entity is a read of its shared state
	requireStatus(t, h.do(http.MethodPost, entitiesPath+"/doc/a/grants",
		`{"subject_kind":"principal","subject_value":"user:bob","permission":"read"}`, alice, "user:alice"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodGet, path+"?offset=-1", nil, bob, "user:bob"), http.StatusOK)
	requireStatus(t, h.do(http.MethodPost, path, `{"type":"x","key":"k","headers":{"operation":"insert"}}`, bob, "user:bob"), http.StatusForbidden)

	// bob's own shared state, for his own entity
	requireStatus(t, h.do(http.MethodPut, "/_electric/shared-state/bobs", nil, bob, "user:bob", "Content-Type", "application/json",
		"Electric-Owner-Entity", "/doc/b"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodGet, "/_electric/shared-state/bobs?offset=-1", nil, alice, "user:alice"), http.StatusForbidden)

	// only one segment; the server's own prefixes are not plain streams
	requireStatus(t, h.do(http.MethodPut, path+"/deeper", nil, alice, "user:alice"), http.StatusNotFound)
	requireStatus(t, h.do(http.MethodPut, "/_cron/abc", nil, alice, "user:alice"), http.StatusForbidden)
	requireStatus(t, h.do(http.MethodPut, "/_entities/abc", nil, alice, "user:alice"), http.StatusForbidden)

	// the dev principal (privileged) may delete it
	requireStatus(t, h.do(http.MethodDelete, path, nil), http.StatusNoContent)
}
