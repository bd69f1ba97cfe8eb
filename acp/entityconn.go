package acp

import (
	"context"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
)

// entityConn is what the sessions attached to one entity other than the adapter's own
// share: the entity's API client and its slash-command feed. session/load attaches a
// session to whichever entity its id names; the feed's long-poll runs while at least one
// session is attached and stops with the last. (The adapter's own entity, --entity, uses
// the agent's api and feed, which live as long as the adapter.)
type entityConn struct {
	api  *entityAPI
	feed *commandFeed
	life context.Context // ends when the last session detaches, or with the adapter
	stop context.CancelFunc
	refs int
}

// attachEntity returns the API client and the command feed (started: its first snapshot
// is there) of the entity typ/id, and the release the attached session calls once, when
// it ends.
func (a *agent) attachEntity(ctx context.Context, typ, id string) (*entityAPI, *commandFeed, func(), error) {
	url := "/" + typ + "/" + id
	if url == a.api.url() {
		if err := a.feed.start(ctx, a.life); err != nil {
			return nil, nil, nil, err
		}
		return a.api, a.feed, func() {}, nil
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, nil, nil, sdk.NewInternalError(map[string]any{"error": "the adapter is shutting down"})
	}
	if a.conns == nil {
		a.conns = map[string]*entityConn{}
	}
	c := a.conns[url]
	if c == nil {
		api := a.api.forEntity(typ, id)
		life, stop := context.WithCancel(a.life)
		c = &entityConn{api: api, feed: newCommandFeed(api, a.log.With(zap.String("entity", url))), life: life, stop: stop}
		a.conns[url] = c
		// Serve's shutdown waits for the feed's follower like for every session goroutine.
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			<-life.Done()
			c.feed.wait()
		}()
	}
	c.refs++
	a.mu.Unlock()
	release := sync.OnceFunc(func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if c.refs--; c.refs == 0 {
			c.stop()
			delete(a.conns, url)
		}
	})
	if err := c.feed.start(ctx, c.life); err != nil {
		release()
		return nil, nil, nil, err
	}
	return c.api, c.feed, release, nil
}
