package schedule_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/testserver"
)

// BenchmarkFutureSendFiring is issue 25's benchmark: with 10,000 future_sends pending
// (due in an hour), 1,000 probes due one every 15 ms fire on time — measured from
// their fireAt to the timestamp of the inbox message that firing appended — while two
// server processes share the database and one of them restarts halfway; no probe may
// fire twice, and no far-future schedule may fire. It runs once whatever b.N is:
//
//	go run ./internal/tools/withpg -- go test -run '^$' -bench FutureSendFiring -benchtime 1x ./schedule/
func BenchmarkFutureSendFiring(b *testing.B) {
	const pending, probes, spacing = 10_000, 1_000, 15 * time.Millisecond
	db := testserver.Start(b, testserver.Options{QuietLogs: true}) // replica 1, all along
	url := db.URL
	put := func(base, path, body string) {
		req, _ := http.NewRequest(http.MethodPut, base+path, bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 300 {
			b.Fatalf("PUT %s: %d %s", path, res.StatusCode, data)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/_electric/entity-types", bytes.NewReader([]byte(`{"name":"bench","description":"d"}`)))
	req.Header.Set("Content-Type", "application/json")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusCreated {
		b.Fatalf("register: %v %v", err, res)
	}
	const entities = 20
	for i := range entities {
		put(url, "/_electric/entities/bench/e"+strconv.Itoa(i), `{}`)
	}

	var t0 time.Time
	{
		second := testserver.Start(b, testserver.Options{QuietLogs: true, DBURL: db.DBURL})
		// the backlog, through both replicas, 16 at a time
		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				base := []string{url, second.URL}[w%2]
				for {
					i := next.Add(1) - 1
					if i >= pending {
						return
					}
					put(base, fmt.Sprintf("/_electric/entities/bench/e%d/schedules/later-%d", i%entities, i),
						`{"scheduleType":"future_send","payload":"later","fireAt":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)+`"}`)
				}
			})
		}
		wg.Wait()
		b.Logf("%d pending schedules stored in %s", pending, time.Since(start).Round(time.Millisecond))
		// every probe is stored well before it is due (checked: a probe stored late would
		// count its storing as lateness)
		t0 = time.Now().Add(8 * time.Second)
		next.Store(0)
		var lateStored atomic.Int64
		for w := range 8 {
			wg.Go(func() {
				base := []string{url, second.URL}[w%2]
				for {
					i := int(next.Add(1) - 1)
					if i >= probes {
						return
					}
					due := t0.Add(time.Duration(i) * spacing)
					at := due.UTC().Format(time.RFC3339Nano)
					put(base, fmt.Sprintf("/_electric/entities/bench/e%d/schedules/probe-%d", i%entities, i),
						`{"scheduleType":"future_send","payload":{"probe":`+strconv.Itoa(i)+`,"at":"`+at+`"},"fireAt":"`+at+`"}`)
					if time.Now().After(due) {
						lateStored.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if n := lateStored.Load(); n > 0 {
			b.Fatalf("%d probes were stored after they were due: the machine is too slow for this benchmark", n)
		}
		if d := time.Until(t0.Add(probes * spacing / 2)); d > 0 {
			time.Sleep(d) // halfway through the probes: this replica stops
		}
		second.Stop()
	}
	third := testserver.Start(b, testserver.Options{QuietLogs: true, DBURL: db.DBURL}) // it comes back
	_ = third

	deadline := t0.Add(probes*spacing + 10*time.Second)
	var lat []time.Duration
	byProbe := map[int]time.Duration{}
	fired := map[int]int{}
	later := 0
	for time.Now().Before(deadline) {
		lat, fired, later, byProbe = lat[:0], map[int]int{}, 0, map[int]time.Duration{}
		for i := range entities {
			res, err := http.Get(url + "/bench/e" + strconv.Itoa(i) + "/main?offset=-1")
			if err != nil {
				b.Fatal(err)
			}
			var evs []struct {
				Type  string `json:"type"`
				Value struct {
					Payload   json.RawMessage `json:"payload"`
					Timestamp time.Time       `json:"timestamp"`
				} `json:"value"`
			}
			err = json.NewDecoder(res.Body).Decode(&evs)
			res.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range evs {
				if e.Type != "inbox" {
					continue
				}
				var p struct {
					Probe int       `json:"probe"`
					At    time.Time `json:"at"`
				}
				if json.Unmarshal(e.Value.Payload, &p) != nil {
					later++
					continue
				}
				fired[p.Probe]++
				lat = append(lat, e.Value.Timestamp.Sub(p.At))
				byProbe[p.Probe] = e.Value.Timestamp.Sub(p.At)
			}
		}
		if len(fired) == probes {
			break
		}
		time.Sleep(200 * time.Millisecond) // paces the reader: it must not load the server it measures
	}
	twice := 0
	for _, n := range fired {
		if n > 1 {
			twice++
		}
	}
	if len(fired) != probes || twice > 0 || later > 0 {
		b.Fatalf("fired %d of %d probes, %d more than once, %d far-future schedules fired", len(fired), probes, twice, later)
	}
	slices.Sort(lat)
	worst := slices.SortedFunc(maps.Keys(byProbe), func(a, b int) int { return int(byProbe[b] - byProbe[a]) })[:10]
	b.Logf("the 10 latest probes (the restart is at probe %d): %v", probes/2, worst)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.Logf("%d probes with %d pending: p50 %s, p99 %s, max %s; none twice; no far-future one fired",
		probes, pending, pct(0.50), pct(0.99), lat[len(lat)-1])
}
