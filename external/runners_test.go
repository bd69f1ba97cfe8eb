package external_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunnerLifecycle: a runner registers (its wake stream is created), keeps a lease by
// heartbeats (health follows), is disabled and enabled; registering again is idempotent,
// and another principal cannot take it over.
func TestRunnerLifecycle(t *testing.T) {
	e := startBare(t)
	r := e.do("POST", "/_electric/runners", `{"id":"r1","label":"laptop","kind":"local"}`, "Electric-Principal", "user:ada")
	require.Equal(t, http.StatusCreated, r.status, r.text())
	run := r.json(t)
	require.Equal(t, "user:ada", run["owner_principal"])
	require.Equal(t, "/runners/r1/wake", run["wake_stream"])
	require.Equal(t, "enabled", run["admin_status"])
	require.Equal(t, http.StatusOK, e.do("HEAD", "/runners/r1/wake", "").status, "the wake stream exists")

	require.Equal(t, "unhealthy", e.do("GET", "/_electric/runners/r1/health", "").json(t)["status"], "no heartbeat yet")
	r = e.do("POST", "/_electric/runners/r1/heartbeat", `{"lease_ms":60000,"diagnostics":{"cpu":0.1}}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	require.Equal(t, "healthy", e.do("GET", "/_electric/runners/r1/health", "").json(t)["status"])
	require.Equal(t, http.StatusOK, e.do("POST", "/_electric/runners/r1/disable", "").status)
	require.Equal(t, "degraded", e.do("GET", "/_electric/runners/r1/health", "").json(t)["status"])
	r = e.do("POST", "/_electric/runners/r1/claim", `{}`)
	require.Equal(t, http.StatusConflict, r.status, r.text())
	require.Contains(t, r.text(), "NOT_RUNNING")
	require.Equal(t, http.StatusOK, e.do("POST", "/_electric/runners/r1/enable", "").status)

	r = e.do("POST", "/_electric/runners", `{"id":"r1","label":"laptop, again"}`, "Electric-Principal", "user:ada")
	require.Equal(t, http.StatusOK, r.status, "registering again: %s", r.text())
	require.Equal(t, "laptop, again", r.json(t)["label"])
	r = e.do("POST", "/_electric/runners", `{"id":"r1","label":"mine now"}`, "Electric-Principal", "user:eve")
	require.Equal(t, http.StatusForbidden, r.status, r.text())
	r = e.do("POST", "/_electric/runners", `{"id":"r2","owner_principal":"user:ada"}`, "Electric-Principal", "user:eve")
	require.Equal(t, http.StatusForbidden, r.status, r.text())
	for _, body := range []string{`{}`, `{"id":"a/b"}`, `{"id":"x","kind":"toaster"}`, `{"id":"x","wake_stream":"/__ds/x"}`,
		`{"id":"x","label":"` + strings.Repeat("l", 300) + `"}`, `{"id":"x","label":"a\u0000b"}`} {
		require.Equal(t, http.StatusBadRequest, e.do("POST", "/_electric/runners", body).status, body)
	}
	var list []map[string]any
	require.NoError(t, json.Unmarshal(e.do("GET", "/_electric/runners?owner_principal=user:ada", "").body, &list))
	require.Len(t, list, 1)
	require.Equal(t, http.StatusNotFound, e.do("GET", "/_electric/runners/nobody", "").status)
}

// TestRunnerClaimsDispatchedWork: a type dispatching to a runner links each entity to
// runner:<id> from the start of its stream (the spawn is its first wake); a send is announced on the runner's wake stream, and the runner's claim
// returns the webhook notification (entity, callback, token); it claims the wake for a
// write token, writes, and finishes it; then nothing is left to claim (204).
func TestRunnerClaimsDispatchedWork(t *testing.T) {
	e := startBare(t)
	require.Equal(t, http.StatusCreated, e.do("POST", "/_electric/runners", `{"id":"r1"}`).status)
	e.registerType(`{"name":"pulled","description":"d","default_dispatch_policy":{"targets":[{"type":"runner","runnerId":"r1"}]}}`)
	r := e.do("POST", "/_electric/entity-types", `{"name":"orphan","description":"d","default_dispatch_policy":{"targets":[{"type":"runner","runnerId":"ghost"}]}}`)
	require.Equal(t, http.StatusCreated, r.status, r.text())
	r = e.do("PUT", "/_electric/entities/orphan/x", `{}`)
	require.Equal(t, http.StatusConflict, r.status, "a spawn for a runner that is not registered: %s", r.text())

	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/pulled/p", `{}`).status)
	// The spawn's own events are the first work (as for a handler in the server).
	r = e.do("POST", "/_electric/runners/r1/claim", `{}`)
	require.Equal(t, http.StatusOK, r.status, "the spawn wakes the runner: %s", r.text())
	first := r.json(t)
	firstTail := first["streams"].([]any)[0].(map[string]any)["offset"].(string)
	r = e.do("POST", "/_electric/wake-callbacks/"+first["wakeId"].(string), `{"epoch":`+fmt.Sprint(first["epoch"])+
		`,"acks":[{"path":"/pulled/p/main","offset":"`+firstTail+`"}],"done":true}`, "Authorization", "Bearer "+first["token"].(string))
	require.Equal(t, http.StatusOK, r.status, r.text())
	require.Equal(t, http.StatusNoContent, e.do("POST", "/_electric/runners/r1/claim", `{}`).status, "nothing to do after the spawn")
	require.Equal(t, http.StatusOK, e.do("POST", "/_electric/entities/pulled/p/send", `{"payload":"work"}`).status)

	var n map[string]any
	deadline := 200
	for ; deadline > 0; deadline-- {
		r = e.do("POST", "/_electric/runners/r1/claim", `{}`)
		if r.status == http.StatusOK {
			n = r.json(t)
			break
		}
		require.Equal(t, http.StatusNoContent, r.status, r.text())
		r = e.do("GET", "/runners/r1/wake?offset=-1&live=long-poll", "") // wait for the announcement
	}
	require.NotNil(t, n, "the send was never claimable")
	require.Equal(t, "message_received", n["triggerEvent"])
	require.Equal(t, "/pulled/p/main", n["streamPath"])
	require.Equal(t, "/pulled/p", n["entity"].(map[string]any)["url"])
	require.Equal(t, "runner:r1", n["subscription_id"])
	wakeID, token := n["wakeId"].(string), n["token"].(string)
	epoch := json.Number(fmt.Sprint(n["epoch"]))

	r = e.do("POST", "/_electric/wake-callbacks/"+wakeID, `{"epoch":`+string(epoch)+`,"wakeId":"`+wakeID+`"}`, "Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, r.status, r.text())
	wt := r.json(t)["writeToken"].(string)
	r = e.do("POST", "/pulled/p/main", `{"type":"text","key":"t","value":{"text":"done it"},"headers":{"operation":"insert"}}`,
		"Authorization", "Bearer "+wt)
	require.Equal(t, http.StatusNoContent, r.status, r.text())
	tail := n["streams"].([]any)[0].(map[string]any)["offset"].(string)
	r = e.do("POST", "/_electric/wake-callbacks/"+wakeID, `{"epoch":`+string(epoch)+`,"acks":[{"path":"/pulled/p/main","offset":"`+tail+`"}],"done":true}`,
		"Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, r.status, r.text())
}
