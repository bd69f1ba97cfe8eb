// Package dsapi serves the Durable Streams protocol over HTTP: create, append, close,
// delete, HEAD, catch-up, long-poll and SSE reads of any stream, with the protocol's
// headers, offsets, producers and forks. Who may do what to a stream, and what a
// stream's owner adds to a create or an append (an entity's rules, a shared state's
// link), is the Policy's: this package asks it at every step and knows nothing of
// entities. Package api implements the Policy (the one access decision of every stream)
// and routes requests here.
package dsapi

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/inflight"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/streamdb"
)

// Op is what a request does with a stream.
type Op int

const (
	// OpRead: catch-up, long-poll and SSE reads, HEAD, and forking the stream (a fork
	// serves the source's bytes).
	OpRead Op = iota
	// OpWrite: appending messages.
	OpWrite
	// OpClose: closing the stream (Stream-Closed: true), with or without messages.
	OpClose
	// OpDelete: deleting the stream.
	OpDelete
	// OpRecreate: PUT at the path of a stream that exists.
	OpRecreate
	// OpManage: the stream's grants (asked by the grant routes, not by this package).
	OpManage
)

// Policy decides who may do what to a stream and adds what a stream's owner needs to a
// create or an append. Every method may answer with an *httpx.Error.
type Policy interface {
	// Authenticate returns r with its caller on the context (401 without valid
	// credentials).
	Authenticate(r *http.Request) (*http.Request, error)
	// OwnCredential reports a stream written with a credential of its own, which Decide
	// checks, rather than as the caller: its writers are not authenticated first.
	OwnCredential(id streamdb.Identity) bool
	// Decide is the stream's one access decision: may the caller do op to the stream id
	// at path. It returns the request with the caller on its context.
	Decide(r *http.Request, id streamdb.Identity, path string, op Op) (*http.Request, error)
	// CheckNewPath refuses a path a new stream may not have (paths the server creates
	// streams at), after the protocol's own path rules passed.
	CheckNewPath(path string) error
	// PrepareCreate completes cfg for a new stream at path (its access kind and owner,
	// CheckNew) and returns what runs in the create's transaction when the stream is new
	// (nil: nothing).
	PrepareCreate(r *http.Request, path string, cfg *streamdb.CreateConfig) (func(context.Context, *streamdb.Tx, *streamdb.Meta) error, error)
	// PrepareAppend checks msgs appended to stream id and returns statements for the
	// append's transaction and what to do once it has committed (each may be nil).
	PrepareAppend(r *http.Request, id streamdb.Identity, msgs [][]byte) ([]streamdb.Statement, func(), error)
	// Snapshot answers a read of m from the beginning with a snapshot positioned at next
	// instead of the history, when the stream has one (ok).
	Snapshot(ctx context.Context, m *streamdb.Meta) (body []byte, next streamdb.Offset, ok bool, err error)
	// Missing answers op on a path with no stream: nil for the protocol's 404, or the
	// refusal the caller would get were the stream there (streams that come into being
	// on first use, whose existence is not everyone's to learn). Reads and deletes ask
	// it for an authenticated caller; appends and closes before authentication, as a
	// stream written with a credential of its own answers them.
	Missing(r *http.Request, path string, op Op) error
}

// Config are the protocol's limits and timeouts (zero values are not defaults: the
// caller fills them in, as api.Config does).
type Config struct {
	// LongPollTimeout is how long a live=long-poll read waits for data before 204.
	LongPollTimeout time.Duration
	// SSELifetime is how long a live=sse response stays open before the server ends it.
	SSELifetime time.Duration
	// MaxAppendBytes bounds a create's or an append's body.
	MaxAppendBytes int64
	// MaxStreamPathBytes bounds a stream path.
	MaxStreamPathBytes int
	// WriteTimeout and WriteMinRate bound how long writing a response may take.
	WriteTimeout time.Duration
	WriteMinRate int64
}

// Server answers Durable Streams requests.
type Server struct {
	cfg     Config
	log     *zap.Logger
	streams *streamdb.Store
	budget  *inflight.Budget
	policy  Policy

	live     context.Context // cancelled by Shutdown
	stopLive context.CancelFunc
	bg       lifecycle.Background // the SSE hubs
	hubs     *sseHubs
}

// New returns a Server over streams; its reads and bodies reserve from budget.
func New(cfg Config, log *zap.Logger, streams *streamdb.Store, budget *inflight.Budget, policy Policy) *Server {
	live, stopLive := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, log: log, streams: streams, budget: budget, policy: policy, live: live, stopLive: stopLive}
	s.hubs = &sseHubs{s: s, hubs: map[int64]*streamHub{}}
	return s
}

// Shutdown ends every long-poll and SSE response in progress (they answer as if their
// timeout had passed) so that a graceful shutdown does not wait out their lifetimes.
func (s *Server) Shutdown() { s.stopLive() }

// Wait returns once the SSE hubs have ended. Call it after Shutdown.
func (s *Server) Wait() { s.bg.Wait() }

// liveContext is ctx, also cancelled by Shutdown.
func (s *Server) liveContext(ctx context.Context, cancel context.CancelFunc) (stop func() bool) {
	return context.AfterFunc(s.live, cancel)
}
