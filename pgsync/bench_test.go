package pgsync_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testserver"
)

// BenchmarkRowChangeToWake: rows inserted at 1,000 a second (each its own transaction,
// from 8 connections, committed synchronously), an entity observing the table; the latency of each insert, from
// its commit to the wake that carries it being readable on the entity's stream (a
// long-poll reader). Reports p50/p99/max in ms. Run with -benchtime=3000x.
func BenchmarkRowChangeToWake(b *testing.B) {
	dbURL := pgtest.URL(b)
	dropSlotsAtEnd(b, dbURL)
	exec(b, dbURL, `CREATE TABLE orders (id int PRIMARY KEY, item text NOT NULL)`)
	opts := options("public.orders")
	opts.StatusInterval = time.Second // the production default
	s := testserver.Start(b, testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: opts})
	_, stream := register(b, s, "", `{"options":{"table":"orders"}}`)
	url := spawnWatcher(b, s, "", "w1", stream)
	readPath := url + "/main"
	if os.Getenv("PGSYNC_BENCH_READ") == "stream" {
		readPath = stream // the replicator alone, without the wake
	}

	pool, err := pxpool(dbURL)
	require.NoError(b, err)
	defer pool.Close()
	n := b.N
	committed := make([]time.Time, n)
	arrived := make([]time.Time, n)
	var mu sync.Mutex
	seen := 0
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// the reader: long-polls the entity's stream and notes when each row's wake arrives
	go func() {
		offset := "-1"
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+readPath+"?offset="+offset+"&live=long-poll", nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			now := time.Now()
			if next := res.Header.Get("Stream-Next-Offset"); next != "" {
				offset = next
			}
			if res.StatusCode != http.StatusOK {
				continue
			}
			var evs []event
			if json.Unmarshal(body, &evs) != nil {
				continue
			}
			mu.Lock()
			for _, e := range evs {
				var v wakeValue
				switch e.Type {
				case "wake":
					_ = json.Unmarshal(e.Value, &v)
				case "pg_sync_change":
					v.Changes = append(v.Changes, struct {
						Collection string `json:"collection"`
						Kind       string `json:"kind"`
						Key        string `json:"key"`
					}{Key: e.Key})
				default:
					continue
				}
				for _, c := range v.Changes {
					var id int
					if _, err := fmt.Sscanf(c.Key[strings.LastIndex(c.Key, "/")+1:], `"%d"`, &id); err == nil && id < n && arrived[id].IsZero() {
						arrived[id] = now
						seen++
					}
				}
			}
			if seen == n {
				close(done)
				mu.Unlock()
				return
			}
			mu.Unlock()
		}
	}()

	b.ResetTimer()
	work := make(chan int, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				if _, err := pool.Exec(ctx, `INSERT INTO orders VALUES ($1, 'x')`, id); err != nil {
					b.Error(err)
					return
				}
				t := time.Now()
				mu.Lock()
				committed[id] = t
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * time.Millisecond)); d > 0 {
			time.Sleep(d) // pacing the load at 1,000 rows a second, not waiting for a result
		}
		work <- i
	}
	close(work)
	wg.Wait()
	rate := float64(n) / time.Since(start).Seconds()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.Fatalf("only %d of %d wakes arrived", seen, n)
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	lat := make([]float64, 0, n)
	for i := range n {
		// a wake read before the insert's Exec returned counts as 0
		lat = append(lat, max(0, float64(arrived[i].Sub(committed[i]).Microseconds())/1000))
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[len(lat)*99/100], "p99-ms")
	b.ReportMetric(lat[len(lat)-1], "max-ms")
	b.ReportMetric(rate, "rows/s")
}

// pxpool is the application's pool. Its commits are synchronous, as Postgres's are by
// default: the test clusters turn synchronous_commit off, and then the walsender sees a
// commit only when the WAL writer flushes it (every 200ms), which is not what a
// production database does.
func pxpool(dbURL string) (*pxPool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	return pgxpool.NewWithConfig(context.Background(), cfg)
}

type pxPool = pgxpool.Pool
