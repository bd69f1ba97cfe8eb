package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
)

// commandFeed keeps the entity's current slash commands, live: it lists them once, then
// follows the entity's slash-command collection stream with long-polls and lists them
// again after every change. The process has one entity, so one feed serves every
// session; each session pushes the snapshots it has not sent yet (see session.pushCommands).
//
// It is push-driven: a long-poll returns as soon as the collection changes (204 when its
// timeout passes with nothing new, and the next one starts at once); there is no timer
// poll. Errors back off and retry.
type commandFeed struct {
	api *entityAPI
	log *zap.Logger

	wg      sync.WaitGroup // the follow goroutine
	mu      sync.Mutex
	started bool
	snap    snapshot
	changed chan struct{} // closed (and replaced) whenever snap changes
}

// snapshot is one complete command set: what an available_commands_update carries.
type snapshot struct {
	cmds  []sdk.AvailableCommand
	names map[string]bool
	json  []byte // cmds as JSON, to tell identical snapshots apart cheaply
	ver   uint64
}

func newCommandFeed(api *entityAPI, log *zap.Logger) *commandFeed {
	return &commandFeed{api: api, log: log, changed: make(chan struct{})}
}

// start lists the commands (so the first snapshot is there when it returns; ctx bounds
// that call) and starts following changes until life ends; once started, later calls do
// nothing. A failed first list is returned and the next call tries again.
func (f *commandFeed) start(ctx, life context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return nil
	}
	if err := life.Err(); err != nil {
		return err
	}
	rows, tail, err := f.api.listCommands(ctx)
	if err != nil {
		return err
	}
	f.setLocked(rows)
	f.started = true
	if tail == "" {
		tail = "now"
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.follow(life, tail)
	}()
	return nil
}

// wait returns once the follow goroutine (if any) has ended; call it after life ended.
func (f *commandFeed) wait() { f.wg.Wait() }

// current is the latest snapshot and a channel closed when a newer one exists.
func (f *commandFeed) current() (snapshot, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap, f.changed
}

// known reports whether the entity has a command called name, for the composer's
// "unknown" flag.
func (f *commandFeed) known(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap.names[name]
}

// setLocked installs rows as the snapshot unless it is identical to the current one (a
// change of fields ACP does not show, such as a version, is not worth a notification).
func (f *commandFeed) setLocked(rows []commandRow) {
	cmds := availableCommands(rows)
	data, _ := json.Marshal(cmds)
	if f.snap.json != nil && bytes.Equal(data, f.snap.json) {
		return
	}
	names := make(map[string]bool, len(rows))
	for _, r := range rows {
		names[r.Name] = true
	}
	f.snap = snapshot{cmds: cmds, names: names, json: data, ver: f.snap.ver + 1}
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *commandFeed) refresh(ctx context.Context) error {
	rows, _, err := f.api.listCommands(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.setLocked(rows)
	f.mu.Unlock()
	return nil
}

// follow long-polls the collection stream from offset; any event means the set changed,
// so it is listed again (the list is the effective rows, which is simpler and safer than
// replaying State Protocol events into them). It ends with ctx, or when the stream is
// closed (the entity ended) or refused for good.
func (f *commandFeed) follow(ctx context.Context, offset string) {
	var cursor string
	stale := false // a change was seen but listing it failed
	b := newBackoff()
	for ctx.Err() == nil {
		res, err := f.api.readStream(ctx, "/slash-commands", offset, cursor, true)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !retryable(err) {
				f.log.Error("stopped following the entity's slash commands", zap.Error(err))
				return
			}
			f.log.Warn("following the entity's slash commands", zap.Error(err), zap.Duration("retry_in", b.peek()))
			if !b.wait(ctx) {
				return
			}
			continue
		}
		b.reset()
		offset, cursor = res.next, res.cursor
		if len(res.events) > 0 || stale {
			if err := f.refresh(ctx); err != nil {
				stale = true
				if ctx.Err() == nil {
					f.log.Warn("listing the entity's slash commands", zap.Error(err))
				}
			} else {
				stale = false
			}
		}
		if res.closed {
			f.log.Info("the entity's slash-command collection is closed (the entity ended)")
			return
		}
	}
}

// backoff is the wait between retries after errors: 100ms doubling to 5s.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 100 * time.Millisecond} }

func (b *backoff) peek() time.Duration { return b.d }

func (b *backoff) reset() { b.d = 100 * time.Millisecond }

// wait sleeps the current delay (false if ctx ended first) and doubles it.
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.d)
	defer t.Stop()
	b.d = min(2*b.d, 5*time.Second)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
