package external_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func hash16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}

// TestServeEndpointDispatches: a type with a serve_endpoint links every entity it spawns
// to that webhook (one subscription shared by the type's entities), so a send wakes the
// handler with no subscription made by a client; a kill unlinks the entity.
func TestServeEndpointDispatches(t *testing.T) {
	e := startBare(t)
	e.registerType(`{"name":"served","description":"d","serve_endpoint":"` + e.hookURL(t) + `"}`)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/served/one", `{}`).status)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/served/two", `{}`).status)
	sub := "/__ds/subscriptions/webhook:" + hash16(e.hookURL(t))
	r := e.do("GET", sub, "")
	require.Equal(t, http.StatusOK, r.status, r.text())
	paths := func() []string {
		var out []string
		for _, s := range e.do("GET", sub, "").json(t)["streams"].([]any) {
			out = append(out, s.(map[string]any)["path"].(string))
		}
		return out
	}
	require.ElementsMatch(t, []string{"served/one/main", "served/two/main"}, paths())

	r = e.do("POST", "/_electric/entities/served/one/send", `{"payload":"hi"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	w := e.next()
	require.Equal(t, "/served/one/main", str(w.body["streamPath"]))
	require.Equal(t, "/served/one", w.body["entity"].(map[string]any)["url"])
	require.Equal(t, e.srv.URL+"/_electric/wake-callbacks/"+str(w.body["wake_id"]), str(w.body["callback"]),
		"the callback names the origin the spawn came through")

	r = e.do("POST", "/_electric/entities/served/two/signal", `{"signal":"SIGKILL"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	require.Equal(t, []string{"served/one/main"}, paths(), "the killed entity is unlinked")
}

// TestDispatchPolicyPerEntitySubscriptions: a webhook target with a subscription_id gets
// one subscription per entity ("<id>:<hash of the entity url>"); URLs outside the
// outbound rules and targets without their address are refused at registration.
func TestDispatchPolicyPerEntitySubscriptions(t *testing.T) {
	e := startBare(t)
	e.registerType(`{"name":"per","description":"d","default_dispatch_policy":{"targets":[{"type":"webhook","url":"` +
		e.hookURL(t) + `","subscription_id":"rt"}]}}`)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/per/x", `{}`).status)
	r := e.do("GET", "/__ds/subscriptions/rt:"+hash16("/per/x"), "")
	require.Equal(t, http.StatusOK, r.status, r.text())
	require.Equal(t, e.hookURL(t), r.json(t)["webhook"].(map[string]any)["url"])

	for _, body := range []string{
		`{"name":"r","description":"d","default_dispatch_policy":{"targets":[{"type":"runner"}]}}`,
		`{"name":"r","description":"d","default_dispatch_policy":{"targets":[{"type":"carrier-pigeon"}]}}`,
		`{"name":"r","description":"d","default_dispatch_policy":{"targets":[{"type":"webhook","url":"http://10.0.0.1/x"}]}}`,
		`{"name":"r","description":"d","serve_endpoint":"ftp://x/y"}`,
	} {
		r := e.do("POST", "/_electric/entity-types", body)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", body, r.text())
	}
}
