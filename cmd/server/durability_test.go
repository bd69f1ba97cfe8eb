package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
)

// TestSIGKILLLosesNothingAcknowledged kills the server in the middle of concurrent
// appends and checks, after a restart, that every append that got a 2xx is present
// exactly once, in order, at the offset it was given, and that idempotent producers
// resume: the append that was in flight is either a duplicate (it had committed) or new,
// never both, and the next sequence number is accepted.
func TestSIGKILLLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills server processes")
	}
	dbURL := pgtest.URL(t)
	port := freePort(t)
	p := startProcess(t, dbURL, port)
	client := &http.Client{Timeout: 5 * time.Second}

	const producers, plain = 6, 4
	paths := make([]string, producers+plain)
	for i := range paths {
		paths[i] = fmt.Sprintf("/v1/stream/durable-%d", i)
		resp := do(t, client, http.MethodPut, p.URL+paths[i], nil, nil)
		require.Equal(t, http.StatusCreated, resp.StatusCode)
	}

	type acked struct {
		n    int
		next string
	}
	type writer struct {
		acks      []acked
		inflight  []byte // producer writers: the append whose answer was lost
		inflightN int
	}
	writers := make([]*writer, len(paths))
	// The kill comes once enough appends were acknowledged, not after a guessed time:
	// a slow CI machine must not turn this into a test of nothing.
	const killAfterAcks = 150
	var ackCount atomic.Int64
	enoughAcked := make(chan struct{})
	var signalOnce sync.Once
	var wg sync.WaitGroup
	for i := range paths {
		w := &writer{inflightN: -1}
		writers[i] = w
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for n := 0; ; n++ {
				body := payload(i, n)
				h := http.Header{"Content-Type": {"application/json"}}
				if i < producers {
					h.Set("Producer-Id", "writer-"+strconv.Itoa(i))
					h.Set("Producer-Epoch", "0")
					h.Set("Producer-Seq", strconv.Itoa(n))
				}
				req, _ := http.NewRequest(http.MethodPost, p.URL+paths[i], bytes.NewReader(body))
				req.Header = h
				resp, err := client.Do(req)
				if err != nil {
					if i < producers {
						w.inflight, w.inflightN = body, n
					}
					return
				}
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					return
				}
				w.acks = append(w.acks, acked{n: n, next: resp.Header.Get("Stream-Next-Offset")})
				if ackCount.Add(1) >= killAfterAcks {
					signalOnce.Do(func() { close(enoughAcked) })
				}
			}
		}(i)
	}
	select {
	case <-enoughAcked:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d appends acknowledged in a minute", ackCount.Load())
	}
	p.kill()
	wg.Wait()

	total := 0
	for _, w := range writers {
		total += len(w.acks)
	}
	require.GreaterOrEqual(t, total, killAfterAcks, "the writers should have had appends acknowledged before the kill")

	p = startProcess(t, dbURL, port)
	for i, path := range paths {
		w := writers[i]
		if i < producers && w.inflightN >= 0 {
			// Retry the append whose answer was lost: 204 if it had committed, 200 if not.
			h := http.Header{"Content-Type": {"application/json"}, "Producer-Id": {"writer-" + strconv.Itoa(i)},
				"Producer-Epoch": {"0"}, "Producer-Seq": {strconv.Itoa(w.inflightN)}}
			resp := do(t, client, http.MethodPost, p.URL+path, w.inflight, h)
			require.Contains(t, []int{http.StatusOK, http.StatusNoContent}, resp.StatusCode)
			h.Set("Producer-Seq", strconv.Itoa(w.inflightN+1))
			resp = do(t, client, http.MethodPost, p.URL+path, payload(i, w.inflightN+1), h)
			require.Equal(t, http.StatusOK, resp.StatusCode, "the producer resumes with the next sequence number")
		}

		msgs := readStream(t, client, p.URL+path)
		// Every message is a payload of this writer; n never repeats and never goes back.
		var ns []int
		var offsets []string
		pos := 0
		for k, m := range msgs {
			var v struct{ W, N int }
			require.NoError(t, json.Unmarshal(m, &v))
			require.Equal(t, i, v.W)
			pos += len(m)
			offsets = append(offsets, fmt.Sprintf("%016d_%016d", k+1, pos))
			ns = append(ns, v.N)
		}
		for k := 1; k < len(ns); k++ {
			require.Equal(t, ns[k-1]+1, ns[k], "stream %s: messages in order, no gap, no duplicate", path)
		}
		// Every acknowledged append is there, at the offset it was acknowledged with.
		for k, a := range w.acks {
			require.Less(t, k, len(ns), "stream %s: acknowledged append %d is missing", path, a.n)
			require.Equal(t, a.n, ns[k])
			require.Equal(t, a.next, offsets[k], "stream %s: append %d moved", path, a.n)
		}
	}
}

func payload(writer, n int) []byte {
	return []byte(fmt.Sprintf(`{"w":%d,"n":%d,"pad":"%s"}`, writer, n, "................................................................"))
}

func do(t *testing.T, c *http.Client, method, url string, body []byte, h http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	if h != nil {
		req.Header = h
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp
}

// readStream reads a JSON stream from the start, following Stream-Next-Offset.
func readStream(t *testing.T, c *http.Client, url string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	offset := "-1"
	for {
		resp, err := c.Get(url + "?offset=" + offset)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var batch []json.RawMessage
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&batch))
		resp.Body.Close()
		out = append(out, batch...)
		offset = resp.Header.Get("Stream-Next-Offset")
		if resp.Header.Get("Stream-Up-To-Date") == "true" {
			return out
		}
	}
}
