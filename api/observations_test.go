package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
)

// TestTagObservation: POST /_electric/observations/entities/ensure-stream makes the
// caller's membership stream of the entities with the tags: spawning, tagging and
// untagging an entity the caller may read writes members insert, update and delete
// events; an entity the caller may not read never appears; the stream is the caller's
// alone; ensuring it again answers the same stream.
func TestTagObservation(t *testing.T) {
	h := setup(t, testserverQuiet())
	const as = "Electric-Principal"
	const url = "/_electric/observations/entities/ensure-stream"
	requireStatus(t, h.do(http.MethodPost, typesPath, `{"name":"doc","description":"d"}`, as, "user:alice"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPost, typesPath+"/doc/grants",
		`{"subject_kind":"principal","subject_value":"user:bob","permission":"spawn"}`, as, "user:alice"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/doc/before", `{"tags":{"team":"a"}}`, as, "user:alice"), http.StatusCreated)

	r := h.do(http.MethodPost, url, `{"tags":{"team":"a"}}`, as, "user:alice")
	requireStatus(t, r, http.StatusOK)
	var got struct{ SourceRef, StreamURL string }
	require.NoError(t, json.Unmarshal(r.Body, &got))
	require.Regexp(t, `^[0-9a-f]{16}-[0-9a-f]{16}$`, got.SourceRef)
	require.Equal(t, "/_entities/"+got.SourceRef, got.StreamURL)
	again := h.do(http.MethodPost, url, `{"tags":{"team":"a"}}`, as, "user:alice")
	require.JSONEq(t, string(r.Body), string(again.Body))
	other := h.do(http.MethodPost, url, `{"tags":{"team":"a"}}`, as, "user:bob")
	requireStatus(t, other, http.StatusOK)
	require.NotEqual(t, string(r.Body), string(other.Body), "each principal has a stream of its own")

	members := func(who string) []event {
		r := h.do(http.MethodGet, got.StreamURL+"?offset=-1", nil, as, who)
		requireStatus(t, r, http.StatusOK)
		return parseEvents(t, r.Body)
	}
	// the entity that had the tag before the observation is there when it is answered
	evs := members("user:alice")
	require.Len(t, evs, 1)
	require.Equal(t, "members", evs[0].Type)
	require.Equal(t, "/doc/before", evs[0].Key)
	require.Equal(t, "insert", evs[0].Headers["operation"])
	require.JSONEq(t, `{"team":"a"}`, string(evs[0].Value["tags"]))
	require.JSONEq(t, `{}`, string(evs[0].Value["spawn_args"]))
	requireMillis(t, evs[0].Value["created_at"])

	// bob's entity with the tag is not alice's to see; alice's next one is
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/doc/bobs", `{"tags":{"team":"a"}}`, as, "user:bob"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/doc/x", `{"tags":{"team":"b"}}`, as, "user:alice"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPost, entitiesPath+"/doc/x/tags/team", `{"value":"a"}`, as, "user:alice"), http.StatusOK)
	testwait.Until(t, "alice's two memberships", func() bool { return len(members("user:alice")) == 2 }, 5*time.Second)
	evs = members("user:alice")
	require.Equal(t, "/doc/x", evs[1].Key)
	require.Equal(t, "insert", evs[1].Headers["operation"])

	// another tag: an update; the tag removed: a delete with the old row
	requireStatus(t, h.do(http.MethodPost, entitiesPath+"/doc/x/tags/colour", `{"value":"red"}`, as, "user:alice"), http.StatusOK)
	testwait.Until(t, "alice's three memberships", func() bool { return len(members("user:alice")) == 3 }, 5*time.Second)
	evs = members("user:alice")
	require.Equal(t, "update", evs[2].Headers["operation"])
	require.JSONEq(t, `{"team":"a","colour":"red"}`, string(evs[2].Value["tags"]))
	requireStatus(t, h.do(http.MethodDelete, entitiesPath+"/doc/x/tags/team", nil, as, "user:alice"), http.StatusOK)
	testwait.Until(t, "alice's four memberships", func() bool { return len(members("user:alice")) == 4 }, 5*time.Second)
	evs = members("user:alice")
	require.Equal(t, "delete", evs[3].Headers["operation"])
	require.Equal(t, "/doc/x", evs[3].Key)
	require.Contains(t, string(evs[3].Raw), `"old_value"`)
	for _, e := range evs {
		require.NotEqual(t, "/doc/bobs", e.Key, "bob's entity is not alice's to see")
	}
	// bob's own stream has his entity (and not alice's, which he may not read)
	var bobs struct{ StreamURL string }
	require.NoError(t, json.Unmarshal(other.Body, &bobs))
	testwait.Until(t, "bob's observation stream", func() bool {
		r := h.do(http.MethodGet, bobs.StreamURL+"?offset=-1", nil, as, "user:bob")
		evs := parseEvents(t, r.Body)
		return len(evs) == 1 && evs[0].Key == "/doc/bobs"
	}, 5*time.Second)

	// alice's stream is hers: bob cannot read it
	requireStatus(t, h.do(http.MethodGet, got.StreamURL+"?offset=-1", nil, as, "user:bob"), http.StatusForbidden)

	requireStatus(t, h.do(http.MethodPost, url, `{"tags":{"team":5}}`, as, "user:alice"), http.StatusBadRequest)
	requireStatus(t, h.do(http.MethodPost, url, `{"tags":[]}`, as, "user:alice"), http.StatusBadRequest)
	requireStatus(t, h.do(http.MethodPost, url, `{"other":1}`, as, "user:alice"), http.StatusBadRequest)
}
