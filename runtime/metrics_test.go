package runtime_test

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/wake"
)

// TestHandlerMetrics: every handler run is counted by entity type and result, and a
// message given up after its last attempt is counted as failed (the type is this test's
// own, so the counts are exact even with other tests in the process).
func TestHandlerMetrics(t *testing.T) {
	def := runtime.EntityDefinition{Type: "metered", Handler: func(ctx *runtime.Context) error {
		if w, ok := ctx.Wake.(runtime.InboxWake); ok && w.Key == "bad" {
			return errors.New("always fails")
		}
		return nil
	}}
	e := startServer(t, wake.Options{MaxAttempts: 2}, true, def)
	value := func(series string) float64 {
		r := e.do(http.MethodGet, "/_electric/metrics", nil)
		require.Equal(t, http.StatusOK, r.Status)
		sc := bufio.NewScanner(bytes.NewReader(r.Body))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
				v, err := strconv.ParseFloat(rest, 64)
				require.NoError(t, err)
				return v
			}
		}
		return 0
	}
	// Metrics are process-wide: count from what earlier runs of this test (-count) left.
	series := []string{
		`entityd_handler_runs_total{entity_type="metered",result="ok"}`,
		`entityd_handler_runs_total{entity_type="metered",result="error"}`,
		`entityd_wakes_failed_total{entity_type="metered"}`,
		`entityd_handler_duration_seconds_count{entity_type="metered"}`,
	}
	base := map[string]float64{}
	for _, s := range series {
		base[s] = value(s)
	}
	delta := func(i int) float64 { return value(series[i]) - base[series[i]] }

	url := e.spawn("metered", "m", nil)
	e.send(url, map[string]any{"key": "bad", "payload": 0})
	e.send(url, map[string]any{"key": "good", "payload": 1})
	testwait.Until(t, "the spawn and the good message ran", func() bool { return delta(0) >= 2 }, 10*time.Second)
	require.Equal(t, 2.0, delta(0), "spawn wake + good")
	require.Equal(t, 2.0, delta(1), "bad, twice")
	require.Equal(t, 1.0, delta(2))
	require.Equal(t, 4.0, delta(3))
}
