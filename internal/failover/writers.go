//go:build unix

package failover

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// writers append numbered messages to one stream and remember which were acknowledged.
type writers struct {
	url    string
	n      int
	client *http.Client

	mu     sync.Mutex
	acked  map[string]bool
	failed int
	mark   time.Time // the kill
	after  []span    // writes begun after mark and acknowledged
}

func newWriters(url string, n int) *writers {
	return &writers{url: url, n: n, acked: map[string]bool{},
		client: &http.Client{Timeout: 3 * time.Second}}
}

func (w *writers) create(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, "PUT", w.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := w.client.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("failover: create the stream: %d", res.StatusCode)
	}
	return nil
}

func (w *writers) start(ctx context.Context, wg *sync.WaitGroup) {
	for g := range w.n {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				id := fmt.Sprintf("w%d-%d", g, i)
				began := time.Now()
				if w.write(ctx, id) {
					w.ack(id, began)
				} else if ctx.Err() == nil {
					w.fail()
					sleep(ctx, 20*time.Millisecond) // an outage: do not spin
				}
			}
		})
	}
}

// write appends {"id": id}; true when entityd acknowledged it.
func (w *writers) write(ctx context.Context, id string) bool {
	body, _ := json.Marshal(map[string]string{"id": id})
	req, err := http.NewRequestWithContext(ctx, "POST", w.url, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := w.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode == http.StatusNoContent || res.StatusCode == http.StatusOK
}

// ack records an acknowledged write; one begun after the kill times the recovery (a
// write in flight at the kill that succeeded had committed before it).
func (w *writers) ack(id string, began time.Time) {
	w.mu.Lock()
	w.acked[id] = true
	if !w.mark.IsZero() && began.After(w.mark) {
		w.after = append(w.after, span{began: began, acked: time.Now()})
	}
	w.mu.Unlock()
}

func (w *writers) fail() {
	w.mu.Lock()
	w.failed++
	w.mu.Unlock()
}

// mark notes the kill: acknowledgements from now on time the recovery.
func (w *writers) markAt(t time.Time) {
	w.mu.Lock()
	w.mark = t
	w.mu.Unlock()
}

// span is one acknowledged write's start and acknowledgement.
type span struct{ began, acked time.Time }

// firstAckAfter is the first acknowledgement, after t, of a write begun after the kill.
func (w *writers) firstAckAfter(t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for _, s := range w.after {
		if s.acked.After(t) && (first.IsZero() || s.acked.Before(first)) {
			first = s.acked
		}
	}
	return first, !first.IsZero()
}

// begunAfter reports whether a write begun after t was acknowledged.
func (w *writers) begunAfter(t time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.after {
		if s.began.After(t) {
			return true
		}
	}
	return false
}

// stored reads the whole stream back and returns the ids it holds.
func (w *writers) stored(ctx context.Context) (map[string]bool, error) {
	present := map[string]bool{}
	offset := "-1"
	for range 100_000 {
		req, err := http.NewRequestWithContext(ctx, "GET", w.url+"?offset="+offset, nil)
		if err != nil {
			return nil, err
		}
		res, err := w.client.Do(req)
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("failover: read the stream: %d %s", res.StatusCode, data)
		}
		var msgs []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(data, &msgs); err != nil {
			return nil, fmt.Errorf("failover: read the stream: %w", err)
		}
		for _, m := range msgs {
			present[m.ID] = true
		}
		next := res.Header.Get("Stream-Next-Offset")
		if res.Header.Get("Stream-Up-To-Date") == "true" || next == offset {
			return present, nil
		}
		offset = next
	}
	return nil, fmt.Errorf("failover: the stream did not end")
}

// waitHTTP waits until url answers 200.
func waitHTTP(ctx context.Context, url string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(url)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		sleep(ctx, 50*time.Millisecond)
	}
	return fmt.Errorf("failover: %s did not answer 200 within 60s", url)
}
