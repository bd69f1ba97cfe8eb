package wakereg_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/streamdb"
)

// BenchmarkRunFinishedWake measures a child's run finishing (its append committed) →
// its parent's wake event committed, with children finishing at a steady rate
// (ENTITYD_BENCH_RATE per second, default 200) for ENTITYD_BENCH_SECONDS (default 10).
// Each finish is one append of a run (started, three text deltas, completed) to a
// child's stream; the parent's wake carries finished_child with the run's text.
//
//	go run ./internal/tools/withpg -- go test -run '^$' -bench RunFinishedWake -benchtime 1x ./wakereg/
func BenchmarkRunFinishedWake(b *testing.B) {
	rate, seconds := envInt("ENTITYD_BENCH_RATE", 200), envInt("ENTITYD_BENCH_SECONDS", 10)
	srv := start(b)
	c := client{t: b, base: srv.URL}
	c.registerType("manager")
	c.registerType("worker")
	const pairs = 400
	ctx := context.Background()
	tokens := make([]string, pairs)
	parentOf := map[int64]int{} // parent stream id -> pair
	for i := range pairs {
		parent := fmt.Sprintf("/manager/m%d", i)
		c.spawn(parent, "")
		tokens[i] = c.spawn(fmt.Sprintf("/worker/w%d", i), `"parent":"`+parent+`","wake":{"subscriberUrl":"`+parent+`","condition":"runFinished"}`)
		id, err := srv.Streams.Identify(ctx, parent+"/main")
		require.NoError(b, err)
		parentOf[id.ID] = i
	}

	// committed[i] is when pair i's finish committed (the append returned), woke[i] when
	// its parent's wake did; whichever is known second records the latency
	var mu sync.Mutex
	committed, woke := make([]time.Time, pairs), make([]time.Time, pairs)
	var lat []time.Duration
	done := make(chan struct{}, rate*seconds)
	settle := func(i int) {
		if !committed[i].IsZero() && !woke[i].IsZero() {
			lat = append(lat, max(0, woke[i].Sub(committed[i])))
			committed[i], woke[i] = time.Time{}, time.Time{}
			done <- struct{}{}
		}
	}
	srv.Streams.OnCommit(func(changes []streamdb.Change) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		for _, ch := range changes {
			if i, ok := parentOf[ch.StreamID]; ok {
				woke[i] = now
				settle(i)
			}
		}
	})

	b.ResetTimer()
	total := rate * seconds
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	for n := range total {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := n % pairs
			run := "run-" + strconv.Itoa(n)
			msgs := [][]byte{[]byte(runEvent(run, "insert", "started"))}
			for k := range 3 {
				msgs = append(msgs, []byte(textDelta(run, strconv.Itoa(k), "some words ")))
			}
			msgs = append(msgs, []byte(runEvent(run, "update", "completed")))
			_, err := srv.Streams.Append(ctx, &streamdb.AppendRequest{Path: fmt.Sprintf("/worker/w%d/main", i),
				ContentType: "application/json", Messages: msgs})
			if err != nil {
				b.Error(err)
				return
			}
			now := time.Now()
			mu.Lock()
			committed[i] = now
			settle(i)
			mu.Unlock()
		}()
	}
	wg.Wait()
	timeout := time.After(30 * time.Second)
	for range total {
		select {
		case <-done:
		case <-timeout:
			b.Fatalf("only %d of %d wakes arrived", len(lat), total)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	b.ReportMetric(float64(p(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.Logf("%d finishes at %d/s: p50 %v, p99 %v, max %v", len(lat), rate, p(0.50), p(0.99), lat[len(lat)-1])
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
