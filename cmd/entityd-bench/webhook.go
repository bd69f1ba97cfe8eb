package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/entityd/entityd/runtime"
)

// webhookResult is the outcome of `entityd-bench webhook`.
type webhookResult struct {
	Label    string  `json:"label,omitempty"`
	Mode     string  `json:"mode"`
	Handler  string  `json:"handler"`
	Entities int     `json:"entities"`
	Rate     float64 `json:"target_rate,omitempty"`
	Seconds  float64 `json:"seconds"`
	// latency: send start → the webhook wake arrives at the handler
	Latency Latency `json:"latency"`
	Skipped int     `json:"skipped_sends,omitempty"` // the entity's previous wake had not arrived yet
	// throughput: full cycles (send → wake → claim → write → done) per second
	Cycles   int     `json:"cycles,omitempty"`
	CyclesPS float64 `json:"cycles_per_second,omitempty"`
	Errors   int     `json:"errors"`
}

// runWebhook measures handlers outside the server: a webhook receiver in this process
// handles an entity type through a dispatch policy (one subscription per entity).
//
//	-mode latency:    sends at -rate per second over -entities; each sample is the time
//	                  from a send's start to its webhook wake (the receiver answers done)
//	-mode throughput: each entity loops send → wake → (handler) → committed, as fast
//	                  as it goes; cycles per second. -handler says how a cycle is handled:
//	                  electric  claim → write a text event with the write token → done
//	                  effects   done with the text event as effects (one callback)
//	                  sdk       the Go SDK (runtime.External) runs a handler that writes it
func runWebhook(args []string) error {
	fs := flag.NewFlagSet("webhook", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	mode := fs.String("mode", "latency", "latency or throughput")
	entities := fs.Int("entities", 100, "entities (one subscription each)")
	rate := fs.Float64("rate", 500, "sends per second (latency mode)")
	dur := fs.Duration("d", 10*time.Second, "measured duration")
	warmup := fs.Duration("warmup", 2*time.Second, "unmeasured warm-up")
	handler := fs.String("handler", "electric", "throughput: electric, effects or sdk")
	_ = fs.Parse(args)
	switch *handler {
	case "electric", "effects", "sdk":
	default:
		return fmt.Errorf("-handler must be electric, effects or sdk")
	}
	ctx, cancel := signalContext()
	defer cancel()
	base := c.base()
	client := newClient(4**entities+16, false)
	id := runID()
	typ := "wh-" + id

	rv := &receiver{base: base, client: client, mode: *mode, handler: *handler, wakes: map[string]chan time.Time{}}
	for i := 0; i < *entities; i++ {
		rv.wakes[fmt.Sprintf("/%s/e%d", typ, i)] = make(chan time.Time, 4)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var h http.Handler = rv
	hook := "http://" + ln.Addr().String() + "/wake"
	if *handler == "sdk" {
		remote, err := sdkHandler(base, typ, rv)
		if err != nil {
			return err
		}
		h = remote.Webhook(ctx)
		if err := remote.RegisterTypes(ctx, runtime.Dispatch{WebhookURL: hook, SubscriptionID: typ}); err != nil {
			return fmt.Errorf("register type: %w", err)
		}
	} else {
		reg, _ := json.Marshal(map[string]any{"name": typ, "description": "webhook benchmark",
			"default_dispatch_policy": map[string]any{"targets": []any{map[string]any{"type": "webhook", "url": hook, "subscription_id": typ}}}})
		if st, _, body, err := do(ctx, client, "POST", base+"/_electric/entity-types", map[string]string{"Content-Type": "application/json"}, reg); err != nil || st != 201 {
			return fmt.Errorf("register type: %d %s %v", st, body, err)
		}
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	if err := parallel(ctx, 16, *entities, func(i int) error {
		st, _, body, err := do(ctx, client, "PUT", fmt.Sprintf("%s/_electric/entities/%s/e%d", base, typ, i),
			map[string]string{"Content-Type": "application/json"}, []byte(`{}`))
		if err != nil || st != 201 {
			return fmt.Errorf("spawn: %d %s %v", st, body, err)
		}
		return nil
	}); err != nil {
		return err
	}
	if *handler == "sdk" || *mode == "latency" { // each spawn is a wake of its own: let them pass
		for i := 0; i < *entities; i++ {
			select {
			case <-rv.wakes[fmt.Sprintf("/%s/e%d", typ, i)]:
			case <-time.After(30 * time.Second):
				return fmt.Errorf("the spawn of e%d was not handled", i)
			}
		}
	}
	send := func(i int) error {
		st, _, body, err := do(ctx, client, "POST", fmt.Sprintf("%s/_electric/entities/%s/e%d/send", base, typ, i),
			map[string]string{"Content-Type": "application/json"}, []byte(`{"payload":"ping"}`))
		if err != nil || st != 200 {
			return fmt.Errorf("send: %d %s %v", st, body, err)
		}
		return nil
	}
	res := webhookResult{Label: c.label, Mode: *mode, Handler: *handler, Entities: *entities, Seconds: dur.Seconds()}
	var errs atomic.Int64
	switch *mode {
	case "latency":
		res.Rate = *rate
		var mu sync.Mutex
		var samples []time.Duration
		busy := make([]atomic.Bool, *entities)
		start := time.Now()
		measureFrom := start.Add(*warmup)
		end := measureFrom.Add(*dur)
		tick := time.NewTicker(time.Duration(float64(time.Second) / *rate))
		defer tick.Stop()
		var wg sync.WaitGroup
		for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
			<-tick.C
			i := n % *entities
			if !busy[i].CompareAndSwap(false, true) {
				if time.Now().After(measureFrom) {
					res.Skipped++
				}
				continue
			}
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				defer busy[i].Store(false)
				t0 := time.Now()
				if err := send(i); err != nil {
					errs.Add(1)
					return
				}
				select {
				case at := <-rv.wakes[fmt.Sprintf("/%s/e%d", typ, i)]:
					if t0.After(measureFrom) {
						mu.Lock()
						samples = append(samples, at.Sub(t0))
						mu.Unlock()
					}
				case <-time.After(10 * time.Second):
					errs.Add(1)
				}
			}(i)
		}
		wg.Wait()
		res.Latency = summarize(samples)
	case "throughput":
		var cycles atomic.Int64
		measureFrom := time.Now().Add(*warmup)
		end := measureFrom.Add(*dur)
		var counted atomic.Bool
		var wg sync.WaitGroup
		for i := 0; i < *entities; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				url := fmt.Sprintf("/%s/e%d", typ, i)
				ch := rv.wakes[url]
				for time.Now().Before(end) && ctx.Err() == nil {
					rv.expecting.Store(url, true)
					if err := send(i); err != nil {
						errs.Add(1)
						continue
					}
					select {
					case <-ch: // the receiver finished the cycle (claim, write, done)
						if time.Now().After(measureFrom) {
							counted.Store(true)
							cycles.Add(1)
						}
					case <-time.After(10 * time.Second):
						errs.Add(1)
					}
				}
			}(i)
		}
		wg.Wait()
		res.Cycles = int(cycles.Load())
		res.CyclesPS = float64(res.Cycles) / dur.Seconds()
	default:
		return fmt.Errorf("-mode must be latency or throughput")
	}
	res.Errors = int(errs.Load() + rv.errors.Load())
	return emit(&c, res, func(w io.Writer) {
		if res.Mode == "latency" {
			latencyTable(w, "send → webhook wake", res.Entities, res.Rate, res.Latency, res.Errors)
			fmt.Fprintf(w, "skipped sends (previous wake still out): %d\n", res.Skipped)
		} else {
			fmt.Fprintf(w, "%d entities, handler %s: %d cycles in %.0fs = %.0f cycles/s (send → wake → handled → committed), %d errors\n",
				res.Entities, res.Handler, res.Cycles, res.Seconds, res.CyclesPS, res.Errors)
		}
	})
}

// receiver is the benchmark's webhook handler.
type receiver struct {
	base    string
	client  *http.Client
	mode    string
	handler string
	wakes   map[string]chan time.Time // entity url → arrivals
	// expecting marks the entities with a send outstanding (throughput mode): only their
	// wakes run a full cycle; the wake that the handler's own write causes is answered
	// done at once, as a real handler that reads nothing new does
	expecting sync.Map
	errors    atomic.Int64
}

func (rv *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(r.Body)
	var wake struct {
		WakeID, Callback, ClaimToken, StreamPath string
		Epoch                                    int64
		Streams                                  []struct{ Path, Offset string }
		Entity                                   struct{ URL string }
	}
	if err := json.Unmarshal(body, &wake); err != nil {
		rv.errors.Add(1)
		w.WriteHeader(400)
		return
	}
	ch := rv.wakes[wake.Entity.URL]
	_, expected := rv.expecting.LoadAndDelete(wake.Entity.URL)
	if rv.mode == "latency" || ch == nil || !expected {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"done":true}`))
		if ch != nil && rv.mode == "latency" {
			select {
			case ch <- at:
			default:
			}
		}
		return
	}
	// throughput: answer at once, then claim, write and finish through the callback
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{}`))
	go func() {
		if err := rv.cycle(wake.Callback, wake.ClaimToken, wake.WakeID, wake.StreamPath, wake.Epoch, wake.Streams); err != nil {
			rv.errors.Add(1)
			return
		}
		select {
		case ch <- time.Now():
		default:
		}
	}()
}

func (rv *receiver) cycle(callback, token, wakeID, stream string, epoch int64, streams []struct{ Path, Offset string }) error {
	ctx := context.Background()
	post := func(url, bearer string, v any) ([]byte, error) {
		b, _ := json.Marshal(v)
		st, _, body, err := do(ctx, rv.client, "POST", url, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + bearer}, b)
		if err != nil || st/100 != 2 {
			return nil, fmt.Errorf("%s: %d %s %v", url, st, body, err)
		}
		return body, nil
	}
	ev := map[string]any{"type": "text", "key": "r-" + wakeID, "value": map[string]any{"text": "pong"}, "headers": map[string]any{"operation": "insert"}}
	var acks []any
	for _, s := range streams {
		acks = append(acks, map[string]any{"path": s.Path, "offset": s.Offset})
	}
	if rv.handler == "effects" {
		_, err := post(callback, token, map[string]any{"epoch": epoch, "acks": acks, "done": true,
			"effects": []any{map[string]any{"stream": stream, "events": []any{ev}}}})
		return err
	}
	body, err := post(callback, token, map[string]any{"epoch": epoch, "wakeId": wakeID})
	if err != nil {
		return err
	}
	var claim struct{ WriteToken string }
	if err := json.Unmarshal(body, &claim); err != nil {
		return err
	}
	if _, err := post(rv.base+stream, claim.WriteToken, ev); err != nil {
		return err
	}
	_, err = post(callback, token, map[string]any{"epoch": epoch, "acks": acks, "done": true})
	return err
}

// sdkHandler is the Go SDK serving the benchmark's type: each message is answered with
// a text event; a committed wake ends the entity's cycle.
func sdkHandler(base, typ string, rv *receiver) (*runtime.External, error) {
	return runtime.NewExternal(runtime.ExternalOptions{Server: base, Client: rv.client, Parallel: 1,
		OnCommitted: func(url string) {
			if ch := rv.wakes[url]; ch != nil {
				select {
				case ch <- time.Now():
				default:
				}
			}
		}}, runtime.EntityDefinition{Type: typ, Description: "webhook benchmark (Go SDK)",
		Handler: func(ctx *runtime.Context) error {
			if _, ok := ctx.Wake.(runtime.InboxWake); ok {
				return ctx.WriteText("pong")
			}
			return nil
		}})
}
