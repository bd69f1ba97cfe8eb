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

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/schedule"
	"github.com/entityd/entityd/streamdb"
)

// TestCronStreamStopsWhenUnwanted: a cron stream nobody schedules against and nobody
// ensured within the idle window stops ticking; ensuring it again restarts it with the
// next tick number (tick keys are never reused, so no tick is swallowed as a duplicate).
// The server keeps time with a test clock: each second of it is one tick.
func TestCronStreamStopsWhenUnwanted(t *testing.T) {
	schedule.IdleCron = 1500 * time.Millisecond // before any server reads it
	clk := clock.NewTest(time.Now())
	srv := testserver.Start(t, testserver.Options{QuietLogs: true, Streams: streamdb.Options{Clock: clk}})
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
	clk.Advance(time.Second) // within the idle window of the ensure: a tick
	testwait.Until(t, "the first tick", func() bool { return len(ticks(path)) == 1 })
	require.False(t, stopped(path))
	clk.Advance(time.Second) // past it: the next tick is not fired, the stream stops
	testwait.Until(t, "the unwanted stream stops", func() bool { return stopped(path) })
	require.Equal(t, []string{"tick-0"}, ticks(path))

	require.Equal(t, path, ensure())
	clk.Advance(time.Second)
	testwait.Until(t, "a tick after the stream is ensured again", func() bool { return len(ticks(path)) == 2 })
	require.Equal(t, []string{"tick-0", "tick-1"}, ticks(path))
}

func itoa(i int) string { return strconv.Itoa(i) }
