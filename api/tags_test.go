package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTags: POST/DELETE .../tags/:key change the entity's tags and append tags events
// ({key, value}; insert, update, delete) in the same transaction; repeating a change
// writes nothing; bad values are 400, unknown entities 404, ended entities 409.
func TestTags(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "t", `{"tags":{"team":"core"}}`)
	const path = entitiesPath + "/chat/t/tags/"
	tagEvents := func() []event { return ofType(h.events("/chat/t"), "tags") }

	r := h.do(http.MethodPost, path+"owner", `{"value":"ada"}`)
	requireStatus(t, r, http.StatusOK)
	o := r.object(t)
	require.JSONEq(t, `{"team":"core","owner":"ada"}`, string(o["tags"]))
	require.Greater(t, integer(t, o["txid"]), int64(0))
	require.NotContains(t, string(r.Body), "write_token")
	evs := tagEvents()
	require.Len(t, evs, 1)
	require.Equal(t, "owner", evs[0].Key)
	require.Equal(t, "insert", evs[0].Headers["operation"])
	require.ElementsMatch(t, []string{"key", "value"}, keys(evs[0].Value))
	require.Equal(t, "owner", str(t, evs[0].Value["key"]))
	require.Equal(t, "ada", str(t, evs[0].Value["value"]))

	requireStatus(t, h.do(http.MethodPost, path+"owner", `{"value":"ada"}`), http.StatusOK)
	require.Len(t, tagEvents(), 1, "setting the same value writes nothing")

	requireStatus(t, h.do(http.MethodPost, path+"owner", `{"value":"grace"}`), http.StatusOK)
	evs = tagEvents()
	require.Len(t, evs, 2)
	require.Equal(t, "update", evs[1].Headers["operation"])
	require.Equal(t, "grace", str(t, evs[1].Value["value"]))
	require.JSONEq(t, `{"team":"core","owner":"grace"}`, string(h.getEntity("/chat/t")["tags"]))

	r = h.do(http.MethodDelete, path+"owner", nil)
	requireStatus(t, r, http.StatusOK)
	require.JSONEq(t, `{"team":"core"}`, string(r.object(t)["tags"]))
	evs = tagEvents()
	require.Len(t, evs, 3)
	require.Equal(t, "delete", evs[2].Headers["operation"])
	require.Equal(t, "owner", evs[2].Key)
	requireStatus(t, h.do(http.MethodDelete, path+"owner", nil), http.StatusOK)
	require.Len(t, tagEvents(), 3, "deleting an absent tag writes nothing")

	// Keys arrive percent-encoded (encodeURIComponent) and are stored decoded.
	requireStatus(t, h.do(http.MethodPost, path+"a%3Ab%2Fc", `{"value":"v"}`), http.StatusOK)
	require.JSONEq(t, `{"team":"core","a:b/c":"v"}`, string(h.getEntity("/chat/t")["tags"]))
	requireStatus(t, h.do(http.MethodDelete, path+"a%3Ab%2Fc", nil), http.StatusOK)

	requireSchemaMismatch(t, h.do(http.MethodPost, path+"x", `{"value":5}`), detail{"/value", "must be string"})
	requireSchemaMismatch(t, h.do(http.MethodPost, path+"x", `{}`), detail{"/value", "must be string"})
	requireError(t, h.do(http.MethodPost, entitiesPath+"/chat/nobody/tags/x", `{"value":"v"}`),
		http.StatusNotFound, "NOT_FOUND", "Entity not found at /chat/nobody")

	requireStatus(t, h.signal("/chat/t", `{"signal":"SIGKILL"}`), http.StatusOK)
	requireError(t, h.do(http.MethodPost, path+"owner", `{"value":"ada"}`), http.StatusConflict, "NOT_RUNNING",
		"Entity is not accepting writes")
	requireError(t, h.do(http.MethodDelete, path+"team", nil), http.StatusConflict, "NOT_RUNNING",
		"Entity is not accepting writes")
	var tags map[string]string
	require.NoError(t, json.Unmarshal(h.getEntity("/chat/t")["tags"], &tags))
	require.Equal(t, map[string]string{"team": "core"}, tags, "refused changes changed nothing")
}
