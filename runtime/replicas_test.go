package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
)

// replicaArgs make a crashed replica's entities move within seconds.
var replicaArgs = []string{"--lease", "2s", "--heartbeat", "300ms", "--sweep", "200ms", "--idle-release", "100ms", "--sleep", "3ms"}

// trySend posts one send to a replica and reports whether it was acknowledged (200); a
// replica that is gone answers with a connection error, not a test failure.
func trySend(base, url, key string, i int) (bool, error) {
	body, _ := json.Marshal(map[string]any{"key": key, "payload": map[string]any{"i": i}})
	req, err := http.NewRequest("POST", base+entitiesPath+url+"/send", bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%d %s", res.StatusCode, data)
	}
	return true, nil
}

// TestThreeReplicasSurviveASIGKILL: three server processes on one database take sends
// for the same entities; one is killed (SIGKILL) a third of the way through. Every
// acknowledged send is handled exactly once as far as anyone can see (one committed
// "ack" per message, in stream order), no two committed runs of one entity overlapped
// (each saw, when it started, every run committed before it), and the dead replica's
// entities are picked up by the others after its lease.
//
// Runs that overlapped without both committing are only counted (the probe's advisory
// lock per entity detects them across processes): a replica whose heartbeats stalled
// past its lease may still be running an entity when another replica takes it over, and
// the fence refuses the stale run's writes.
func TestThreeReplicasSurviveASIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three server processes")
	}
	const entities, total, senders = 30, 3_000, 16
	dbURL := pgtestURL(t)
	procs := []*process{startProbe(t, dbURL, replicaArgs...), startProbe(t, dbURL, replicaArgs...),
		startProbe(t, dbURL, replicaArgs...)}
	urls := make([]string, entities)
	for i := range urls {
		urls[i] = spawn(t, procs[i%3].base, "probe", fmt.Sprintf("r%02d", i), nil)
	}

	var dead atomic.Bool // procs[1] was killed
	var killedAt time.Time
	alive := func(k int) bool { return k != 1 || !dead.Load() }
	jobs := make(chan int)
	var acked, retried atomic.Int64
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range jobs {
				key := fmt.Sprintf("m%05d", i)
				// a send that was not acknowledged is retried on the next replica with
				// the same key: the idempotency key makes it one message
				for attempt := 0; ; attempt++ {
					k := (i + g + attempt) % 3
					if !alive(k) {
						continue
					}
					ok, err := trySend(procs[k].base, urls[i%entities], key, i)
					if ok {
						acked.Add(1)
						break
					}
					retried.Add(1)
					if attempt > 20 {
						t.Errorf("send %s failed 20 times, last: %v", key, err)
						return
					}
				}
			}
		})
	}
	for i := range total {
		if i == total/3 {
			procs[1].kill()
			killedAt = time.Now()
			dead.Store(true)
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	require.EqualValues(t, total, acked.Load())

	pool := pgxPool(t, dbURL)
	count := func(sql string) int64 {
		var n int64
		require.NoError(t, pool.QueryRow(context.Background(), sql).Scan(&n))
		return n
	}
	// (the senders' principal entity, made by their first send, has no handler)
	testwait.Until(t, "every entity's stream is handled to its tail", func() bool {
		return count(`SELECT count(*) FROM streams s JOIN entity_wake w ON w.stream_id = s.id WHERE w.scanned_seq < s.tail_seq
			AND w.entity_type <> 'principal'`) == 0
	}, 2*time.Minute)
	t.Logf("all handled %v after the SIGKILL; %d sends retried on another replica; %d handler runs for %d messages",
		time.Since(killedAt), retried.Load(), count(`SELECT count(*) FROM probe_deliveries`), total)

	for _, u := range urls {
		events := readStream(t, procs[0].base, u, "-1").Events
		inbox := inboxOrder(events)
		acks := texts(t, events)
		require.Len(t, acks, len(inbox), "one acknowledged run per message of %s", u)
		for i, k := range inbox {
			require.Equal(t, "ack "+k, acks[i], "order of %s", u)
		}
		runs := ofType(events, "probe_run")
		require.Len(t, runs, len(inbox), "one committed run per message of %s", u)
		for i, run := range runs {
			var seen int
			run.field(t, "seen", &seen)
			require.Equal(t, i, seen, "two committed runs of %s overlapped: run %s (%s) started when %d runs had committed, not %d",
				u, run.Key, run.Value, seen, i)
		}
	}
	var all []string
	for _, u := range urls {
		all = append(all, inboxOrder(readStream(t, procs[2].base, u, "-1").Events)...)
	}
	sort.Strings(all)
	require.Len(t, slices.Compact(all), total, "every acknowledged send is in a stream once")
	t.Logf("%d runs found their entity's lock taken by another run; no two of the runs that committed overlapped",
		count(`SELECT count(*) FROM probe_overlaps`))
}

// polled is what one long-poll answered.
type polled struct {
	body, next string
	err        error
}

// longPoll reads path on base from offset, waiting for data (it runs on its own
// goroutine, so it reports failures instead of failing the test).
func longPoll(base, path, offset string) polled {
	res, err := http.Get(base + path + "?offset=" + offset + "&live=long-poll")
	if err != nil {
		return polled{err: err}
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("long-poll %s: %d %s", path, res.StatusCode, body)
	}
	return polled{body: string(body), next: res.Header.Get("Stream-Next-Offset"), err: err}
}

// TestReplicasWakeEachOther: a long-poll, an SSE reader and a slash-command subscriber
// on one replica see what is written through another.
func TestReplicasWakeEachOther(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three server processes")
	}
	dbURL := pgtestURL(t)
	a, b, c := startProbe(t, dbURL, replicaArgs...), startProbe(t, dbURL, replicaArgs...), startProbe(t, dbURL, replicaArgs...)

	// a plain stream: created on a, read live on b (long-poll) and c (SSE)
	r := do(t, a.base, "PUT", "/replica-test/s1", "")
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	tail := r.Header.Get("Stream-Next-Offset")
	sseCtx, stopSSE := context.WithCancel(context.Background())
	defer stopSSE()
	sseReq, err := http.NewRequestWithContext(sseCtx, "GET", c.base+"/replica-test/s1?offset="+tail+"&live=sse", nil)
	require.NoError(t, err)
	sse, err := http.DefaultClient.Do(sseReq)
	require.NoError(t, err)
	defer sse.Body.Close()
	sseLines := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := sse.Body.Read(buf)
			if n > 0 {
				sseLines <- string(buf[:n])
			}
			if err != nil {
				close(sseLines)
				return
			}
		}
	}()

	var lat []time.Duration
	for i := range 20 {
		got := make(chan polled, 1)
		go func() { got <- longPoll(b.base, "/replica-test/s1", tail) }()
		// the long-poll must be parked on b before the append: wait for b to watch
		testwait.Until(t, "the long-poll is parked", func() bool { return parked(t, b.base) > 0 }, 5*time.Second)
		msg := fmt.Sprintf(`"hello-%d"`, i)
		start := time.Now()
		r := do(t, a.base, "POST", "/replica-test/s1", msg)
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Body)
		select {
		case p := <-got:
			lat = append(lat, time.Since(start))
			require.NoError(t, p.err)
			require.Equal(t, "["+msg+"]", p.body)
			tail = p.next
		case <-time.After(10 * time.Second):
			t.Fatal("the long-poll on replica b was not woken by the append on replica a")
		}
	}
	slices.Sort(lat)
	t.Logf("append on a → long-poll on b answered: p50 %v, max %v", lat[len(lat)/2], lat[len(lat)-1])
	var seen strings.Builder
	testwait.Until(t, "the SSE reader on replica c saw every append", func() bool {
		for {
			select {
			case s := <-sseLines:
				seen.WriteString(s)
			default:
				return strings.Contains(seen.String(), "hello-19")
			}
		}
	}, 10*time.Second)
	require.Contains(t, seen.String(), "hello-0")

	// slash commands: registered through a, seen by a subscriber of the collection on c
	url := spawn(t, b.base, "probe", "cmds", nil)
	head := do(t, c.base, "HEAD", url+"/slash-commands", nil)
	require.Equal(t, http.StatusOK, head.Status)
	cmds := make(chan polled, 1)
	go func() { cmds <- longPoll(c.base, url+"/slash-commands", head.Header.Get("Stream-Next-Offset")) }()
	testwait.Until(t, "the subscriber is parked", func() bool { return parked(t, c.base) > 0 }, 5*time.Second)
	r = do(t, a.base, "PUT", entitiesPath+url+"/slash-commands/deploy?owner=ops", `{"name":"deploy","description":"Ship it"}`)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	select {
	case p := <-cmds:
		require.NoError(t, p.err)
		require.Contains(t, p.body, `"key":"deploy"`)
		require.Contains(t, p.body, `"description":"Ship it"`)
	case <-time.After(10 * time.Second):
		t.Fatal("the slash-command subscriber on replica c did not see the command registered on replica a")
	}
}

// parked is how many long-polls the replica has waiting (its metric).
func parked(t *testing.T, base string) int {
	t.Helper()
	r := do(t, base, "GET", "/_electric/metrics", nil)
	require.Equal(t, http.StatusOK, r.Status)
	for _, line := range strings.Split(string(r.Body), "\n") {
		if strings.HasPrefix(line, "entityd_long_polls_waiting ") {
			var n float64
			_, err := fmt.Sscan(strings.TrimPrefix(line, "entityd_long_polls_waiting "), &n)
			require.NoError(t, err)
			return int(n)
		}
	}
	return 0
}
