package external

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/streamdb"
)

// Links are also made on send, as the reference's linkEntityDispatchSubscription does:
// an entity spawned before its type had a serve_endpoint or a default_dispatch_policy
// (or whose type changed its targets since) is linked to the targets its type has now
// when it is next sent a message. A send costs nothing more once its entity is linked
// at its type's revision: the process remembers (sendLinks), so only the first send to
// an entity after a start or a re-registration of its type makes the transaction.

// maxSendLinks bounds what a process remembers; past it, the memory starts afresh (a
// forgotten entity costs one more link transaction, which changes nothing).
const maxSendLinks = 200_000

type sendLinks struct {
	mu sync.Mutex
	m  map[string]int // entity URL → the type revision it was linked at
}

func (c *sendLinks) has(url string, revision int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[url]
	return ok && r == revision
}

func (c *sendLinks) put(url string, revision int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxSendLinks {
		c.m = make(map[string]int)
	}
	c.m[url] = revision
}

// BeforeSend is inbox's SetBeforeSend hook: it links e to its type's dispatch targets
// unless that is known done at the type's current revision. A target that cannot be
// linked (a runner not registered, or registered by another principal) does not fail
// the send: it is logged, and tried again at the type's next revision.
func (d *Dispatch) BeforeSend(ctx context.Context, e *entity.Entity, t *entity.Type) error {
	if t == nil || d.Store == nil || d.sent.has(e.URL, t.Revision) {
		return nil
	}
	targets, err := t.DispatchTargets()
	if err != nil || len(targets) == 0 {
		d.sent.put(e.URL, t.Revision)
		return nil
	}
	var after func()
	err = d.Store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		var err error
		after, err = d.OnSpawn(ctx, tx, e, t) // the same links as at spawn; existing ones are kept
		return err
	})
	if err != nil {
		if ctx.Err() != nil || !refusal(err) {
			return err
		}
		if d.Log != nil {
			d.Log.Warn("an entity could not be linked to its type's dispatch target", zap.String("entity", e.URL), zap.Error(err))
		}
	} else if after != nil {
		after()
	}
	d.sent.put(e.URL, t.Revision)
	return nil
}
