package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/streamdb"
)

// entry is one entity's MCP server and the goroutine that keeps its prompts equal to
// the entity's effective slash commands.
type entry struct {
	s      *Service
	url    string
	server *mcp.Server
	http   http.Handler
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{} // closed after the first load (err set when it failed)
	err    error

	// users (requests in flight) and lastUsed are guarded by s.mu.
	users    int
	lastUsed time.Time

	mu   sync.Mutex
	rows map[string]slashcmd.Row // the commands as last loaded, by name
	seen map[string][]byte       // their JSON, to tell a changed row from an unchanged one

	toolsMu sync.Mutex
	tools   map[string]messageTool // the message tools, by name (message_tools.go)

	watch resourceWatch // resources.go
	ids   sessionIDs    // revive.go
}

// pageSize bounds a prompts/list page: many clients read only the first page, so it is
// generous, but a client cannot ask for an unbounded one.
const pageSize = 200

func (s *Service) newEntry(e *entity.Entity) *entry {
	ctx, cancel := context.WithCancel(s.ctx)
	en := &entry{s: s, url: e.URL, ctx: ctx, cancel: cancel, ready: make(chan struct{}), lastUsed: time.Now(),
		rows: map[string]slashcmd.Row{}, seen: map[string][]byte{}, tools: map[string]messageTool{}}
	en.server = mcp.NewServer(&mcp.Implementation{Name: "entityd", Title: "entityd " + e.URL, Version: "1"},
		&mcp.ServerOptions{
			Instructions: "The prompts are the slash commands of the entity " + e.URL +
				"; they change while you are connected (notifications/prompts/list_changed). " +
				"The send tool delivers a message, usually a prompt invocation, to the entity; " +
				"the other tools, if any, send the entity's typed messages. " +
				"The resources timeline and state show what the entity wrote (subscribe to follow it).",
			PageSize:                  pageSize,
			CompletionHandler:         en.complete,
			SupportedProtocolVersions: ProtocolVersions,
			GetSessionID:              en.ids.newID,
			// Everything here needs read on the entity: no shared cache may keep it.
			SetCacheable:       func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
			SubscribeHandler:   en.subscribe,
			UnsubscribeHandler: en.unsubscribe,
			Capabilities: &mcp.ServerCapabilities{Prompts: &mcp.PromptCapabilities{ListChanged: true},
				Tools: &mcp.ToolCapabilities{ListChanged: true}, Completions: &mcp.CompletionCapabilities{},
				Resources: &mcp.ResourceCapabilities{Subscribe: true}},
			Logger: sdkLogger(s.log),
		})
	en.addSendTool()
	en.addResources()
	// Each stream's events are kept (EventStoreBytes for the entity's sessions, oldest
	// dropped first) so that a client reconnecting with Last-Event-ID gets what was sent
	// meanwhile: a list_changed during a reconnect is not lost.
	events := mcp.NewMemoryEventStore(nil)
	events.SetMaxBytes(s.opts.EventStoreBytes)
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return en.server },
		&mcp.StreamableHTTPOptions{
			SessionTimeout:      s.opts.SessionTimeout,
			MaxRequestBodyBytes: s.opts.MaxBodyBytes,
			EventStore:          lenientEvents{EventStore: events, log: s.log},
			Logger:              sdkLogger(s.log),
			// api checks Host and Origin for every mode (browser.go); the SDK's own
			// loopback check would refuse a deployment behind a proxy on this machine.
			DisableLocalhostProtection: true,
		})
	en.http = auth.RequireBearerToken(sessionOwner, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(streamable)
	s.wg.Go(en.run)
	return en
}

// sessionOwner hands the principal api authenticated to the SDK, which binds each
// session to it and refuses (403) another principal's requests on that session.
func sessionOwner(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	p, ok := principal.FromContext(r.Context())
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: p.String()}, nil
}

// withSessionOwner gives the request the bearer header the SDK's middleware looks for
// when the caller authenticated without one (dev mode); sessionOwner ignores its text.
func withSessionOwner(r *http.Request) *http.Request {
	if httpx.Bearer(r) != "" {
		return r
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer entityd-principal")
	return r
}

// run loads the prompts, then reloads them after every change of the collection stream
// until the entry closes or the entity is deleted.
func (en *entry) run() {
	log := en.s.log.With(zap.String("entity", en.url))
	m, err := en.s.deps.Streams.Lookup(en.ctx, entitypath.Collection(en.url))
	if err == nil {
		err = en.sync(en.ctx)
	}
	if err != nil {
		if errors.Is(err, streamdb.ErrNotFound) {
			err = httpx.New(http.StatusNotFound, "NOT_FOUND", "Entity "+en.url+" has no slash-command collection")
		}
		en.err = err
		close(en.ready)
		return
	}
	if err := en.syncMessageTools(en.ctx); err != nil {
		log.Warn("mcp: loading the entity's message types as tools failed", zap.Error(err))
	}
	close(en.ready)
	from, dirty := m.Tail, false
	backoff := 100 * time.Millisecond
	for {
		res, err := en.s.deps.Streams.Wait(en.ctx, m, from)
		if en.ctx.Err() != nil {
			return
		}
		if errors.Is(err, streamdb.ErrNotFound) {
			en.s.drop(en) // the entity was deleted: its sessions end
			return
		}
		if err == nil {
			from, dirty = res.Tail, true
			err = en.sync(en.ctx)
		}
		if err != nil {
			log.Warn("mcp: reloading the slash commands failed; retrying", zap.Error(err))
			if !sleep(en.ctx, backoff) {
				return
			}
			backoff = min(2*backoff, 5*time.Second)
			if dirty {
				_ = en.sync(en.ctx)
			}
			continue
		}
		dirty, backoff = false, 100*time.Millisecond
		if res.Closed {
			return // a closed collection never changes again
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sync makes the server's prompts the entity's current commands. Only changed rows are
// replaced; the SDK gathers changes made within 10 ms into one list_changed.
func (en *entry) sync(ctx context.Context) error {
	rows, err := en.s.commandsOf(ctx, en.url)
	if err != nil {
		return err
	}
	en.mu.Lock()
	defer en.mu.Unlock()
	keep := make(map[string]bool, len(rows))
	for _, row := range rows {
		keep[row.Name] = true
		raw, _ := json.Marshal(row)
		if string(en.seen[row.Name]) == string(raw) {
			continue
		}
		en.seen[row.Name], en.rows[row.Name] = raw, row
		en.server.AddPrompt(promptOf(row), promptHandler(en.url, row))
	}
	var gone []string
	for name := range en.rows {
		if !keep[name] {
			gone = append(gone, name)
			delete(en.rows, name)
			delete(en.seen, name)
		}
	}
	if len(gone) > 0 {
		en.server.RemovePrompts(gone...)
	}
	return nil
}

// row returns the command called name as last loaded.
func (en *entry) row(name string) (slashcmd.Row, bool) {
	en.mu.Lock()
	defer en.mu.Unlock()
	r, ok := en.rows[name]
	return r, ok
}

// known reports whether the entity has a command called name.
func (en *entry) known(name string) bool {
	_, ok := en.row(name)
	return ok
}

// sessions is how many MCP sessions the entity's server has.
func (en *entry) sessions() int {
	n := 0
	for range en.server.Sessions() {
		n++
	}
	return n
}

// release ends one request's use of the entry.
func (en *entry) release() {
	en.s.mu.Lock()
	en.users--
	en.lastUsed = time.Now()
	en.s.mu.Unlock()
}

// idleSince is how long nobody has used the entry (0 while in use); s.mu is held.
func (en *entry) idleSince(now time.Time) time.Duration {
	if en.users > 0 || en.sessions() > 0 {
		return 0
	}
	return now.Sub(en.lastUsed)
}

// close stops the follower and ends every session.
func (en *entry) close() {
	en.cancel()
	for ss := range en.server.Sessions() {
		_ = ss.Close()
	}
}
