package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/webhooksrc"
)

// BenchmarkWebhookDelivery: ENTITYD_BENCH_N (default 2,000) signed 1 KiB GitHub
// deliveries from 4 senders to a source with ENTITYD_BENCH_SUBSCRIBERS (default 10)
// subscribed entities: the answer latency (verified, appended, committed), deliveries/s,
// and delivery → wake latency of the last subscriber (its wake's timestamp − the event's
// received_at; both have millisecond precision).
//
//	go run ./internal/tools/withpg -- go test -run '^$' -bench WebhookDelivery -benchtime 1x ./api/
func BenchmarkWebhookDelivery(b *testing.B) {
	n, subs := benchEnv("ENTITYD_BENCH_N", 2000), benchEnv("ENTITYD_BENCH_SUBSCRIBERS", 10)
	srv := testserver.Start(b, testserver.Options{QuietLogs: true,
		WebhookSources: webhooksrc.Options{DeliveriesPerMinute: -1, DeliveryBytesPerMinute: -1}})
	call := func(method, path, body string, headers ...string) int {
		st, _ := benchCall(b, srv.URL, method, path, body, headers...)
		return st
	}
	require.Equal(b, 201, call("POST", typesPath, `{"name":"bot","description":"d"}`))
	require.Equal(b, 201, call("POST", sourcesPath, `{"webhookKey":"gh","scheme":"github","secret":"`+hookSecret+`"}`))
	last := "/bot/s" + strconv.Itoa(subs-1)
	for i := range subs {
		url := "/bot/s" + strconv.Itoa(i)
		require.Equal(b, 201, call("PUT", entitiesPath+url, `{}`))
		require.Equal(b, 200, call("PUT", entitiesPath+url+"/webhook-source-subscriptions/p", `{"webhookKey":"gh"}`))
	}
	body := `{"pad":"` + strings.Repeat("x", 1000) + `"}`
	sig := githubSignature(hookSecret, body)
	round := 0
	for b.Loop() {
		round++
		var mu sync.Mutex
		var answers []time.Duration
		var wg sync.WaitGroup
		next := make(chan int, n)
		for i := range n {
			next <- i
		}
		close(next)
		start := time.Now()
		for range 4 {
			wg.Go(func() {
				for i := range next {
					t0 := time.Now()
					if st := call("POST", deliveryPath+"gh", body, "X-GitHub-Delivery", fmt.Sprintf("r%d-%d", round, i),
						"X-GitHub-Event", "push", "X-Hub-Signature-256", sig); st != 200 {
						b.Errorf("delivery %d: %d", i, st)
					}
					mu.Lock()
					answers = append(answers, time.Since(t0))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		var wakes []benchEvent
		testwait.Until(b, "every wake of the last subscriber", func() bool {
			wakes = wakes[:0]
			for _, e := range benchEvents(b, srv.URL, last+"/main") {
				if e.Type == "wake" {
					wakes = append(wakes, e)
				}
			}
			return len(wakes) >= n*round
		}, 3*time.Minute)
		woken := time.Since(start)
		received := map[string]time.Time{}
		for _, e := range benchEvents(b, srv.URL, "/_webhooks/gh") {
			at, err := time.Parse(time.RFC3339Nano, e.Value.ReceivedAt)
			require.NoError(b, err)
			received[e.Key] = at
		}
		var lat []time.Duration
		for _, w := range wakes {
			at, err := time.Parse(time.RFC3339Nano, w.Value.Timestamp)
			require.NoError(b, err)
			if r, ok := received[w.Value.Changes[0].Key]; ok && strings.HasPrefix(w.Value.Changes[0].Key, fmt.Sprintf("r%d-", round)) {
				lat = append(lat, at.Sub(r))
			}
		}
		require.Len(b, lat, n, "one wake per delivery")
		slices.Sort(answers)
		slices.Sort(lat)
		pct := func(d []time.Duration, p int) float64 { return float64(d[len(d)*p/100].Microseconds()) / 1000 }
		b.ReportMetric(float64(n)/elapsed.Seconds(), "deliveries/s")
		b.ReportMetric(pct(answers, 50), "answer-p50-ms")
		b.ReportMetric(pct(answers, 99), "answer-p99-ms")
		b.ReportMetric(pct(lat, 50), "wake-p50-ms")
		b.ReportMetric(pct(lat, 99), "wake-p99-ms")
		b.ReportMetric(woken.Seconds(), "all-woken-s")
	}
}

func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchCall makes one request and returns its status and body.
func benchCall(b *testing.B, base, method, path, body string, headers ...string) (int, []byte) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	require.NoError(b, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(b, err)
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

type benchEvent struct {
	Type  string `json:"type"`
	Key   string `json:"key"`
	Value struct {
		Timestamp  string `json:"timestamp"`
		ReceivedAt string `json:"received_at"`
		Changes    []struct {
			Key string `json:"key"`
		} `json:"changes"`
	} `json:"value"`
}

func benchEvents(b *testing.B, base, path string) []benchEvent {
	var out []benchEvent
	offset := "-1"
	for {
		res, err := http.Get(base + path + "?offset=" + offset)
		require.NoError(b, err)
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(b, 200, res.StatusCode, "%s", data)
		var evs []benchEvent
		require.NoError(b, json.Unmarshal(data, &evs))
		out = append(out, evs...)
		if res.Header.Get("Stream-Up-To-Date") == "true" {
			return out
		}
		offset = res.Header.Get("Stream-Next-Offset")
	}
}
