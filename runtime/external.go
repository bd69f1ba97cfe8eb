package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/schemas"
)

// External runs entity definitions in a process other than the server, with no change to
// their handlers: it receives the server's wakes as a webhook handler (Webhook) or as a
// pull-wake runner (RunRunner), reads each woken entity's stream over HTTP, finds the
// same wakes the server would (wake.Scanner), runs the Handler with the same Context, and
// sends what the handler wrote back with the wake's callback, where the server checks it
// and commits it together with the acknowledgement: all of a run's writes or none, and
// none under a stale epoch. Failing runs are retried with backoff and given up on after
// MaxAttempts, with the same error events as in the server.
//
// Differences from running in the server: Steering() never delivers (steer messages are
// wakes of their own), InboxWake.Offset is empty, and a send is checked against its
// target's schemas when the wake commits rather than when Send is called.
type External struct {
	server  string
	client  *http.Client
	headers http.Header
	log     *zap.Logger
	opts    ExternalOptions

	defs    map[string]*EntityDefinition
	schemas *schemas.Cache
	states  *stateCache
	keys    *jwksCache
}

// ExternalOptions configure a External.
type ExternalOptions struct {
	// Server is entityd's base URL, e.g. http://127.0.0.1:4437.
	Server string
	// Client makes the requests (default: a client with a 60 s timeout).
	Client *http.Client
	// Headers are added to every request to the server.
	Headers http.Header
	Log     *zap.Logger
	// MaxAttempts is how many times a failing unit of work is run before it is given up
	// on (default 5, as in the server); BaseBackoff and MaxBackoff bound the pause
	// between attempts (default 200 ms doubling to 30 s).
	MaxAttempts             int
	BaseBackoff, MaxBackoff time.Duration
	// Parallel is how many entities of one wake are handled at once (default 8).
	Parallel int
	// MaxWakes bounds the wakes the webhook handles at once (default 64); beyond it a
	// wake is answered 503, and the server delivers it again later.
	MaxWakes int
	// CommitEvery: once the runs of one entity in a wake have written this many events
	// (default 500) or about 1 MiB, what was handled is committed at the next boundary
	// of the stream reads (1 MiB each) and the wake goes on, so that a large backlog is
	// committed in parts.
	CommitEvery int
	// Heartbeat is how often a wake in progress renews its lease (default 10 s).
	Heartbeat time.Duration
	// CachedEntities bounds the entity states kept between wakes (default 1,000).
	CachedEntities int
	// OnCommitted, when set, is called with an entity's URL once what its handler wrote
	// in a wake is committed (for metrics, logs and tests).
	OnCommitted func(entityURL string)
}

// NewExternal prepares defs to run against the server at opts.Server.
func NewExternal(opts ExternalOptions, defs ...EntityDefinition) (*External, error) {
	if !strings.HasPrefix(opts.Server, "http://") && !strings.HasPrefix(opts.Server, "https://") {
		return nil, fmt.Errorf("runtime: External needs the server's http(s) URL, got %q", opts.Server)
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 60 * time.Second}
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.BaseBackoff, 200*time.Millisecond)
	def(&opts.MaxBackoff, 30*time.Second)
	def(&opts.Heartbeat, 10*time.Second)
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 5
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 8
	}
	if opts.MaxWakes <= 0 {
		opts.MaxWakes = 64
	}
	if opts.CommitEvery <= 0 {
		opts.CommitEvery = 500
	}
	if opts.CachedEntities <= 0 {
		opts.CachedEntities = 1000
	}
	r := &External{server: strings.TrimRight(opts.Server, "/"), client: opts.Client, headers: opts.Headers,
		log: opts.Log.Named("external"), opts: opts, defs: map[string]*EntityDefinition{}, schemas: schemas.NewCache(),
		states: newStateCache(opts.CachedEntities)}
	r.keys = &jwksCache{r: r}
	for i := range defs {
		d := defs[i]
		if _, err := d.TypeJSON(); err != nil {
			return nil, err
		}
		if _, dup := r.defs[d.Type]; dup {
			return nil, fmt.Errorf("runtime: entity type %q is defined twice", d.Type)
		}
		r.defs[d.Type] = &d
	}
	if len(r.defs) == 0 {
		return nil, errors.New("runtime: External needs at least one entity definition")
	}
	return r, nil
}

// backoff is the pause after n failures.
func (r *External) backoff(n int) time.Duration {
	b := r.opts.BaseBackoff
	for i := 1; i < n && b < r.opts.MaxBackoff; i++ {
		b *= 2
	}
	return min(b, r.opts.MaxBackoff)
}

// externalWake is a wake as a webhook delivers it and a runner's claim returns it
// (Electric's names, with the Durable Streams ones as fallbacks).
type externalWake struct {
	WakeID     string `json:"wakeId"`
	WakeIDDS   string `json:"wake_id"`
	Epoch      int64  `json:"epoch"`
	Generation int64  `json:"generation"`
	Callback   string `json:"callback"`
	ClaimToken string `json:"claimToken"`
	Token      string `json:"token"`
	Streams    []struct {
		Path        string `json:"path"`
		Offset      string `json:"offset"`
		AckedOffset string `json:"acked_offset"`
	} `json:"streams"`
}

func (w *externalWake) normalize() error {
	if w.WakeID == "" {
		w.WakeID = w.WakeIDDS
	}
	if w.Epoch == 0 {
		w.Epoch = w.Generation
	}
	if w.ClaimToken == "" {
		w.ClaimToken = w.Token
	}
	if w.WakeID == "" || w.Epoch < 1 || w.Callback == "" || w.ClaimToken == "" {
		return errors.New("runtime: a wake needs wakeId, epoch, callback and claimToken")
	}
	return nil
}

// handleWake runs the handlers of every entity the wake lists with new events, and
// commits what they wrote with the acknowledgements and the end of the wake, in one
// callback. When the server refuses that (one entity's writes are not acceptable), each
// entity is committed on its own, so that one cannot hold back the others. An entity
// that could not be read, or whose commit failed for want of the server, is left
// unacknowledged and the wake is not ended: its lease lapses and the server wakes the
// handler again.
func (r *External) handleWake(ctx context.Context, w *externalWake) error {
	if err := w.normalize(); err != nil {
		return err
	}
	hbCtx, stopHeartbeat := context.WithCancel(ctx)
	defer stopHeartbeat()
	go r.heartbeat(hbCtx, w)

	var (
		mu     sync.Mutex
		runs   []*streamRun
		failed []error
		wg     sync.WaitGroup
		slots  = make(chan struct{}, r.opts.Parallel)
	)
	for _, s := range w.Streams {
		if s.Offset == "" || s.Offset == s.AckedOffset {
			continue // nothing new on this stream
		}
		path := "/" + strings.TrimLeft(s.Path, "/")
		acked := s.AckedOffset
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			run, err := r.runStream(ctx, w, path, acked)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, fmt.Errorf("%s: %w", path, err))
				return
			}
			runs = append(runs, run)
		}()
	}
	wg.Wait()
	if len(failed) == 0 {
		err := r.commitAll(ctx, w, runs)
		if err == nil || !refused(err) {
			for _, run := range runs {
				run.release(err == nil)
				if err == nil {
					r.committed(run)
				}
			}
			return err
		}
	}
	for _, run := range runs {
		err := r.commit(ctx, w, run)
		run.release(err == nil)
		if err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", run.path, err))
		} else {
			r.committed(run)
		}
	}
	if err := errors.Join(failed...); err != nil {
		return err
	}
	_, err := r.call(ctx, http.MethodPost, w.Callback, w.ClaimToken, map[string]any{"epoch": w.Epoch, "done": true}, nil)
	return err
}

// errTooLarge: the wake's writes together are too large for one callback.
var errTooLarge = &APIError{Status: http.StatusRequestEntityTooLarge, Code: "TOO_LARGE", Msg: "the wake's writes are committed entity by entity"}

func (r *External) committed(run *streamRun) {
	if r.opts.OnCommitted != nil {
		r.opts.OnCommitted(run.url)
	}
}

// commitAll acknowledges every stream of the wake with all the runs' writes, and ends it.
func (r *External) commitAll(ctx context.Context, w *externalWake, runs []*streamRun) error {
	size := 0
	for _, run := range runs {
		size += run.eff.size()
	}
	if size > 3*commitBudgetBytes {
		return errTooLarge // committed entity by entity instead
	}
	body := map[string]any{"epoch": w.Epoch, "done": true}
	acks := make([]map[string]string, 0, len(runs))
	var docs []*Effects
	for _, run := range runs {
		acks = append(acks, run.ack())
		if doc := run.eff; !doc.Empty() {
			docs = append(docs, doc)
		}
	}
	body["acks"] = acks
	if len(docs) > 0 {
		body["effects"] = docs
	}
	_, err := r.call(ctx, http.MethodPost, w.Callback, w.ClaimToken, body, nil)
	return err
}

// heartbeat renews the wake's lease while it is being handled.
func (r *External) heartbeat(ctx context.Context, w *externalWake) {
	r.every(ctx, "wake heartbeat", w.Callback, w.ClaimToken, map[string]any{"epoch": w.Epoch})
}

// every POSTs body to target at each ExternalOptions.Heartbeat until ctx ends (a failure
// is logged; the next tick tries again).
func (r *External) every(ctx context.Context, what, target, token string, body any) {
	(&lifecycle.Every{Interval: r.opts.Heartbeat, Run: func(ctx context.Context) {
		if _, err := r.call(ctx, http.MethodPost, target, token, body, nil); err != nil && ctx.Err() == nil {
			r.log.Warn(what+" failed", zap.Error(err))
		}
	}}).Until(ctx)
}
