package runtime_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/wake"
)

// TestDelayedSendSurvivesARestartAndWakesTheHandler: a delayed send stored by one server
// process fires after that process stopped and another started on the same database,
// and reaches the entity's Go handler as an InboxWake, once.
func TestDelayedSendSurvivesARestartAndWakesTheHandler(t *testing.T) {
	var mu sync.Mutex
	var got []runtime.InboxWake
	def := runtime.EntityDefinition{Type: "reminder", Handler: func(ctx *runtime.Context) error {
		if w, ok := ctx.Wake.(runtime.InboxWake); ok {
			mu.Lock()
			got = append(got, w)
			mu.Unlock()
		}
		return nil
	}}
	dbURL := pgtestURL(t)
	first := startServerOn(t, dbURL, wake.Options{}, false, def)
	url := first.spawn("reminder", "r", nil)
	r := first.do(http.MethodPost, entitiesPath+url+"/send", map[string]any{
		"type": "note", "key": "standup", "afterMs": 1500, "payload": map[string]any{"text": "standup"}})
	require.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
	first.stop()
	require.EqualValues(t, 1, first.queryInt(`SELECT count(*) FROM delayed_sends`),
		"the first process stopped before the send was due (else this test proves nothing)")

	second := startServerOn(t, dbURL, wake.Options{}, false, def)
	testwait.Until(t, "the delayed send to reach the handler after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	}, 15*time.Second)
	// a second delivery of it would come before a message sent now
	second.send(url, map[string]any{"type": "note", "key": "marker", "payload": map[string]any{"text": "m"}})
	testwait.Until(t, "the marker after it", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0 && got[len(got)-1].Key == "marker"
	}, 15*time.Second)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2, "the delayed send once, then the marker")
	require.Equal(t, "standup", got[0].Key)
	require.Equal(t, "note", got[0].Type)
	require.JSONEq(t, `{"text":"standup"}`, string(got[0].Payload))
}
