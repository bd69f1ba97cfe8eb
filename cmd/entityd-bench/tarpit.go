package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// tarpitResult is the outcome of `entityd-bench tarpit`.
type tarpitResult struct {
	Label        string  `json:"label,omitempty"`
	TarpitWakes  int     `json:"tarpit_entities"`
	TarpitOpen   int64   `json:"tarpit_open_requests"`     // when the healthy sends began
	TarpitMax    int64   `json:"tarpit_max_open_requests"` // over the whole run
	Healthy      int     `json:"healthy_entities"`
	Latency      Latency `json:"latency"` // healthy type: send start → its webhook wake
	Errors       int     `json:"errors"`
	SettleSecond float64 `json:"settle_seconds"`
}

// runTarpit measures whether a webhook target that never answers delays another
// target's wakes. It registers a type whose dispatch policy posts to a tarpit (a
// listener in this process that holds every request open, never answering) and one whose
// webhook answers {"done":true} at once, each on its own port; spawns -tarpit entities of
// the first and sends to each, so that as many wakes hang; waits until the tarpit's open
// requests stop growing; then sends once to each of -healthy entities of the second type,
// -every apart, and measures send start → the healthy webhook's wake.
func runTarpit(args []string) error {
	fs := flag.NewFlagSet("tarpit", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	tarpitN := fs.Int("tarpit", 150, "entities of the tarpit type (each one wake that hangs)")
	healthyN := fs.Int("healthy", 20, "entities of the healthy type (one measured wake each)")
	every := fs.Duration("every", 100*time.Millisecond, "delay between the healthy sends")
	timeout := fs.Duration("timeout", 180*time.Second, "longest wait for one healthy wake (counted as an error beyond)")
	settle := fs.Duration("settle", 2*time.Second, "the tarpit's open requests must not change for this long before measuring")
	_ = fs.Parse(args)
	ctx, cancel := signalContext()
	defer cancel()
	base := c.base()
	client := newClient(64, false)
	id := runID()
	hdr := map[string]string{"Content-Type": "application/json"}

	// the tarpit: accepts, reads the wake, answers nothing until entityd gives up
	var open, maxOpen atomic.Int64
	tarpit, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n := open.Add(1)
		for m := maxOpen.Load(); n > m && !maxOpen.CompareAndSwap(m, n); m = maxOpen.Load() {
		}
		defer open.Add(-1)
		select {
		case <-r.Context().Done():
		case <-ctx.Done():
		}
	}))
	if err != nil {
		return err
	}
	defer tarpit.close()
	// the healthy target: done at once, and the time each entity's wake arrived
	var mu sync.Mutex
	arrivals := map[string]chan time.Time{}
	healthy, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var wake struct{ Entity struct{ URL string } }
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &wake)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"done":true}`))
		mu.Lock()
		ch := arrivals[wake.Entity.URL]
		mu.Unlock()
		if ch != nil {
			select {
			case ch <- at:
			default:
			}
		}
	}))
	if err != nil {
		return err
	}
	defer healthy.close()

	register := func(typ, hook string) error {
		reg, _ := json.Marshal(map[string]any{"name": typ, "description": "tarpit benchmark",
			"default_dispatch_policy": map[string]any{"targets": []any{map[string]any{"type": "webhook", "url": hook, "subscription_id": typ}}}})
		if st, _, body, err := do(ctx, client, "POST", base+"/_electric/entity-types", hdr, reg); err != nil || st != 201 {
			return fmt.Errorf("register %s: %d %s %v", typ, st, body, err)
		}
		return nil
	}
	spawn := func(typ string, i int) error {
		st, _, body, err := do(ctx, client, "PUT", fmt.Sprintf("%s/_electric/entities/%s/e%d", base, typ, i), hdr, []byte(`{}`))
		if err != nil || st != 201 {
			return fmt.Errorf("spawn %s/e%d: %d %s %v", typ, i, st, body, err)
		}
		return nil
	}
	send := func(typ string, i int) error {
		st, _, body, err := do(ctx, client, "POST", fmt.Sprintf("%s/_electric/entities/%s/e%d/send", base, typ, i), hdr, []byte(`{"payload":"ping"}`))
		if err != nil || st != 200 {
			return fmt.Errorf("send %s/e%d: %d %s %v", typ, i, st, body, err)
		}
		return nil
	}

	// The healthy entities first, their spawn wakes handled before the tarpit fills.
	good, bad := "ok-"+id, "tarpit-"+id
	if err := register(good, healthy.url); err != nil {
		return err
	}
	for i := 0; i < *healthyN; i++ {
		arrivals[fmt.Sprintf("/%s/e%d", good, i)] = make(chan time.Time, 4)
	}
	if err := parallel(ctx, 8, *healthyN, func(i int) error { return spawn(good, i) }); err != nil {
		return err
	}
	for i := 0; i < *healthyN; i++ {
		select {
		case <-arrivals[fmt.Sprintf("/%s/e%d", good, i)]:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("the spawn of %s/e%d was not delivered", good, i)
		}
	}

	if err := register(bad, tarpit.url); err != nil {
		return err
	}
	if err := parallel(ctx, 16, *tarpitN, func(i int) error {
		if err := spawn(bad, i); err != nil {
			return err
		}
		return send(bad, i)
	}); err != nil {
		return err
	}
	settleStart := time.Now()
	last, since := open.Load(), time.Now()
	for time.Since(since) < *settle || last == 0 {
		if ctx.Err() != nil || time.Since(settleStart) > time.Minute {
			return fmt.Errorf("the tarpit's open requests did not settle (%d open)", open.Load())
		}
		time.Sleep(50 * time.Millisecond)
		if n := open.Load(); n != last {
			last, since = n, time.Now()
		}
	}
	res := tarpitResult{Label: c.label, TarpitWakes: *tarpitN, TarpitOpen: open.Load(), Healthy: *healthyN,
		SettleSecond: time.Since(settleStart).Seconds()}

	var samples []time.Duration
	var errs atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < *healthyN; i++ {
		if i > 0 {
			time.Sleep(*every)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			t0 := time.Now()
			if err := send(good, i); err != nil {
				errs.Add(1)
				return
			}
			select {
			case at := <-arrivals[fmt.Sprintf("/%s/e%d", good, i)]:
				mu.Lock()
				samples = append(samples, at.Sub(t0))
				mu.Unlock()
			case <-time.After(*timeout):
				errs.Add(1)
			}
		}(i)
	}
	wg.Wait()
	res.Latency = summarize(samples)
	res.TarpitMax = maxOpen.Load()
	res.Errors = int(errs.Load())
	return emit(&c, res, func(w io.Writer) {
		fmt.Fprintf(w, "%d tarpit wakes hanging (%d tarpit requests open when measuring, %d at most)\n",
			res.TarpitWakes, res.TarpitOpen, res.TarpitMax)
		latencyTable(w, "healthy", res.Healthy, 0, res.Latency, res.Errors)
	})
}

// listener is an HTTP server on a loopback port of its own.
type listener struct {
	url string
	srv *http.Server
}

func serve(h http.Handler) (*listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &listener{url: "http://" + ln.Addr().String() + "/wake", srv: srv}, nil
}

func (l *listener) close() { _ = l.srv.Close() }
