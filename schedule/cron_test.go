package schedule_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/schedule"
)

// TestCronStreamStopsWhenUnwanted: a cron stream nobody schedules against and nobody
// ensured within the idle window stops ticking; ensuring it again restarts it with the
// next tick number (tick keys are never reused, so no tick is swallowed as a duplicate).
func TestCronStreamStopsWhenUnwanted(t *testing.T) {
	schedule.IdleCron = 1500 * time.Millisecond // before any server reads it
	srv := testserver.Start(t, testserver.Options{QuietLogs: true})
	ensure := func() string {
		res, err := http.Post(srv.URL+"/_electric/observations/cron/ensure-stream", "application/json",
			strings.NewReader(`{"expression":"* * * * * *"}`))
		require.NoError(t, err)
		defer res.Body.Close()
		var out struct{ StreamURL string }
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
		return out.StreamURL
	}
	ticks := func(path string) []string {
		res, err := http.Get(srv.URL + path + "?offset=-1")
		require.NoError(t, err)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		var evs []struct{ Key string }
		require.NoError(t, json.Unmarshal(body, &evs), string(body))
		keys := make([]string, len(evs))
		for i, e := range evs {
			keys[i] = e.Key
		}
		return keys
	}
	stopped := func(path string) bool {
		var inf bool
		require.NoError(t, srv.Pool.QueryRow(context.Background(),
			`SELECT fire_at = 'infinity' FROM cron_streams WHERE path = $1`, path).Scan(&inf))
		return inf
	}
	path := ensure()
	require.Eventually(t, func() bool { return stopped(path) }, 10*time.Second, 50*time.Millisecond)
	before := ticks(path)
	require.NotEmpty(t, before)
	for i, k := range before {
		require.Equal(t, "tick-"+itoa(i), k)
	}
	require.Equal(t, path, ensure())
	require.Eventually(t, func() bool { return len(ticks(path)) > len(before) }, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, "tick-"+itoa(len(before)), ticks(path)[len(before)])
}

func itoa(i int) string { return strconv.Itoa(i) }
