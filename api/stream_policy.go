package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/entityd/entityd/api/dsapi"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/slashcmd/slashdb"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/webhooksrc"
)

// streamPolicy is the Durable Streams room's dsapi.Policy: the one access decision of
// every stream (stream_access.go), and what the server's own kinds of stream add to the
// protocol — an entity's rules on what its handler appends, a shared state's link to
// its owner, an entity's slash-command collection read as a snapshot.
type streamPolicy struct{ s *Server }

func (p streamPolicy) Authenticate(r *http.Request) (*http.Request, error) {
	return p.s.authenticated(r)
}

// OwnCredential: an entity's stream is appended to with the entity's write token, which
// is not a principal's credential.
func (p streamPolicy) OwnCredential(id streamdb.Identity) bool {
	return id.Access.Kind == streamdb.AccessEntity
}

func (p streamPolicy) Decide(r *http.Request, id streamdb.Identity, path string, op dsapi.Op) (*http.Request, error) {
	return p.s.decideStream(r, id, path, op)
}

// CheckNewPath keeps plain streams off the paths the server creates streams at; a
// shared state is created under its own rule (decideSharedState).
func (p streamPolicy) CheckNewPath(path string) error {
	if isSharedStatePath(path) || strings.HasPrefix(path, webhooksrc.StreamPrefix) {
		return nil // decided by their own rules (a webhook stream's PUT is refused when new)
	}
	return reservedStreamPath(path)
}

// PrepareCreate makes the caller the owner of a plain stream, within their quota; a
// shared state needs an owner entity the caller may write, linked in the create's
// transaction (sharedStateOwnerHeader).
func (p streamPolicy) PrepareCreate(r *http.Request, path string, cfg *streamdb.CreateConfig) (func(context.Context, *streamdb.Tx, *streamdb.Meta) error, error) {
	s := p.s
	shared := isSharedStatePath(path)
	cfg.Access = streamdb.Access{Kind: streamdb.AccessPlain, Owner: caller(r).String()}
	if shared {
		cfg.Access.Kind = streamdb.AccessShared
	}
	cfg.CheckNew = func() error {
		if strings.HasPrefix(path, webhooksrc.StreamPrefix) {
			return reservedStreamPath(path)
		}
		if shared {
			if _, err := s.decideStream(r, streamdb.Identity{Access: cfg.Access}, path, dsapi.OpWrite); err != nil {
				return err
			}
		}
		return s.streamQuota(r.Context(), caller(r))
	}
	if !shared {
		return nil, nil
	}
	owner := strings.TrimSpace(r.Header.Get(sharedStateOwnerHeader))
	return func(_ context.Context, tx *streamdb.Tx, m *streamdb.Meta) error {
		return s.linkSharedState(r, tx, m.ID, owner)
	}, nil
}

// PrepareAppend applies an entity's rules to what is appended to its stream (by its
// handler, with its write token): the event types the handler may write, and the wakes
// its manifest entries register in the append's transaction, noted once committed.
func (p streamPolicy) PrepareAppend(r *http.Request, id streamdb.Identity, msgs [][]byte) ([]streamdb.Statement, func(), error) {
	s := p.s
	if id.Access.Kind != streamdb.AccessEntity {
		return nil, nil, nil
	}
	if err := s.checkHandlerWrite(r, id.Access.Entity, msgs); err != nil {
		return nil, nil, err
	}
	statements, sources, err := s.manifestWakes(r, id.Access.Entity, msgs)
	if err != nil || len(sources) == 0 {
		return statements, nil, err
	}
	return statements, func() { s.wakes.Noted(context.WithoutCancel(r.Context()), sources...) }, nil
}

// Missing hides whether a principal entity's streams exist from other principals.
func (p streamPolicy) Missing(r *http.Request, path string, op dsapi.Op) error {
	return p.s.missingPrincipalStream(r, path, op)
}

// Snapshot answers a read of an entity's slash-command collection from the start with
// its current rows, positioned at the collection's tail.
func (p streamPolicy) Snapshot(ctx context.Context, m *streamdb.Meta) ([]byte, streamdb.Offset, bool, error) {
	if m.Access.Kind != streamdb.AccessEntity || !strings.HasSuffix(m.Path, entitypath.CollectionSuffix) {
		return nil, streamdb.Offset{}, false, nil
	}
	url := strings.TrimSuffix(m.Path, entitypath.CollectionSuffix)
	rows, tail, err := p.s.registry.Commands().Snapshot(ctx, url)
	if err != nil {
		return nil, streamdb.Offset{}, false, err
	}
	return streamdb.JoinJSON(slashdb.SnapshotEvents(rows, tail)), tail, true, nil
}
