package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// An entity's MCP server offers two resources, both read from its main stream, so that
// an editor can show what the entity said without speaking the Durable Streams
// protocol:
//
//   - timeline: the newest events of the main stream (messages in, the handler's runs,
//     texts and replies), each with the offset after it;
//   - state: the stream materialized as StreamDB does it (one collection per event
//     type, rows by key), what a UI built on StreamDB shows.
//
// Both are subscribable: while a session is subscribed, every change of the main stream
// sends notifications/resources/updated for both (at most one pair per
// Options.ResourceUpdateInterval), and the client reads again.
const (
	resourceScheme = "entityd://entity"
	timelineSuffix = "/timeline"
	stateSuffix    = "/state"
)

// timelineURI and stateURI name the entity's resources, e.g.
// entityd://entity/assistant/c1/timeline (the entity URL's segments are escaped already).
func timelineURI(url string) string { return resourceScheme + url + timelineSuffix }
func stateURI(url string) string    { return resourceScheme + url + stateSuffix }

// addResources registers the entity's resources on its server.
func (en *entry) addResources() {
	en.server.AddResource(&mcp.Resource{
		URI: timelineURI(en.url), Name: "timeline", Title: "Timeline of " + en.url, MIMEType: "application/json",
		Description: fmt.Sprintf("The newest events of the entity's main stream (at most %d, %d bytes), oldest first, "+
			"each with the offset after it; subscribe to hear of new ones.", en.s.opts.TimelineEvents, en.s.opts.TimelineBytes),
	}, en.readTimeline)
	en.server.AddResource(&mcp.Resource{
		URI: stateURI(en.url), Name: "state", Title: "State of " + en.url, MIMEType: "application/json",
		Description: "The entity's main stream materialized: one collection per event type, rows by key " +
			"(as StreamDB shows it); subscribe to hear of changes.",
	}, en.readState)
}

// readTimeline answers the timeline: the last TimelineEvents events, fewer when they
// would pass TimelineBytes (the newest is always there).
func (en *entry) readTimeline(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	st := en.s.deps.Streams
	m, err := en.mainStream(ctx)
	if err != nil {
		return nil, err
	}
	from, err := st.MessageEnd(ctx, m, m.Tail.Seq-int64(en.s.opts.TimelineEvents))
	if errors.Is(err, streamdb.ErrNotFound) {
		from = streamdb.Start // retention removed the older ones: read what is left
	} else if err != nil {
		return nil, err
	}
	var events [][]byte
	for from.Less(m.Tail) {
		msgs, err := st.Read(ctx, m, from, m.Tail)
		if err != nil {
			return nil, err
		}
		if len(msgs) == 0 {
			break
		}
		for _, msg := range msgs {
			var ev rawjson.Object
			ev.String("offset", msg.End.String())
			if json.Valid(msg.Data) {
				ev.Raw("event", msg.Data)
			} else {
				ev.String("data", string(msg.Data)) // not JSON: shown, never dropped
			}
			events = append(events, ev.Bytes())
		}
		from = msgs[len(msgs)-1].End
	}
	size, keep := 0, len(events)
	for keep > 0 {
		n := len(events[keep-1]) + 1
		if keep < len(events) && size+n > en.s.opts.TimelineBytes {
			break // the newest is kept whatever its size; older ones while they fit
		}
		size += n
		keep--
	}
	var out rawjson.Object
	out.String("entity", en.url).String("stream", m.Path).String("offset", m.Tail.String())
	out.Raw("events", streamdb.JoinJSON(events[keep:]))
	return text(req.Params.URI, out.Bytes()), nil
}

// readState answers the state: the main stream read from its start (in pages) into a
// wire.State. A stream longer than StateStreamBytes is refused rather than read.
func (en *entry) readState(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	st := en.s.deps.Streams
	m, err := en.mainStream(ctx)
	if err != nil {
		return nil, err
	}
	if m.Tail.Pos > en.s.opts.StateStreamBytes {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
			"the main stream of %s holds %d bytes, more than the %d this server materializes for the state resource; "+
				"read the stream %s over HTTP instead", en.url, m.Tail.Pos, en.s.opts.StateStreamBytes, m.Path)}
	}
	state := wire.NewState()
	for from := streamdb.Start; from.Less(m.Tail); {
		msgs, err := st.Read(ctx, m, from, m.Tail)
		if err != nil {
			return nil, err
		}
		if len(msgs) == 0 {
			break
		}
		for _, msg := range msgs {
			state.Apply(msg.End.Seq, msg.Data)
		}
		from = msgs[len(msgs)-1].End
	}
	collections, _ := state.MarshalJSON()
	var out rawjson.Object
	out.String("entity", en.url).String("stream", m.Path).String("offset", m.Tail.String())
	out.Raw("collections", collections)
	return text(req.Params.URI, out.Bytes()), nil
}

func (en *entry) mainStream(ctx context.Context) (*streamdb.Meta, error) {
	m, err := en.s.deps.Streams.Lookup(ctx, entitypath.Main(en.url))
	if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
		return nil, mcp.ResourceNotFoundError(timelineURI(en.url))
	}
	return m, err
}

func text(uri string, body []byte) *mcp.ReadResourceResult {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(body)}}}
}

// resourceWatch sends resources/updated while sessions are subscribed: the first
// subscription starts one goroutine per entity that waits on the main stream, and it
// runs until the entity's server closes. The SDK keeps who is subscribed to what and
// sends each notification only to them.
type resourceWatch struct {
	mu      sync.Mutex
	started bool
}

// subscribe accepts a subscription to one of the entity's resources (anything else is
// -32002) and starts the watcher.
func (en *entry) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	if !en.ownsResource(req.Params.URI) {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	en.watch.mu.Lock()
	defer en.watch.mu.Unlock()
	if en.watch.started {
		return nil
	}
	// The watcher starts from the tail as it is now, before the subscription is
	// answered: a change the client makes right after the answer is then one it is told
	// about. (Read by the goroutine instead, the tail could already include that change,
	// and the client would wait for a notification that never comes.)
	m, err := en.s.deps.Streams.Lookup(ctx, entitypath.Main(en.url))
	if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	if err != nil {
		return err // the next subscription tries again
	}
	// Under s.mu and only before Stop: Stop cancels s.ctx before it takes s.mu, so this
	// Go cannot come after Stop's Wait has begun (newEntry does the same).
	en.s.mu.Lock()
	defer en.s.mu.Unlock()
	if en.s.ctx.Err() == nil {
		en.watch.started = true
		en.s.wg.Go(func() { en.watchMain(m) })
	}
	return nil
}

func (en *entry) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if !en.ownsResource(req.Params.URI) {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	return nil
}

func (en *entry) ownsResource(uri string) bool {
	return uri == timelineURI(en.url) || uri == stateURI(en.url)
}

// watchMain waits on the main stream and, after each change, tells the subscribed
// sessions that both resources changed; then it rests ResourceUpdateInterval, so a
// handler streaming a reply in many small events costs a client a few reads a second,
// not one per event.
func (en *entry) watchMain(m *streamdb.Meta) {
	log := en.s.log.With(zap.String("entity", en.url))
	st := en.s.deps.Streams
	from := m.Tail
	backoff := 100 * time.Millisecond
	for {
		res, err := st.Wait(en.ctx, m, from)
		if en.ctx.Err() != nil {
			return
		}
		if errors.Is(err, streamdb.ErrNotFound) {
			return // the entity was deleted; run's follower drops the entry
		}
		if err != nil {
			log.Warn("mcp: waiting on the main stream failed; retrying", zap.Error(err))
			if !sleep(en.ctx, backoff) {
				return
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		from = res.Tail
		for _, uri := range []string{timelineURI(en.url), stateURI(en.url)} {
			_ = en.server.ResourceUpdated(en.ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
		if res.Closed || !sleep(en.ctx, en.s.opts.ResourceUpdateInterval) {
			return
		}
	}
}
