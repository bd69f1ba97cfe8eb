package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sessionStore keeps each MCP session's identity in Postgres (table mcp_sessions;
// queries/sessions.sql), so that a session outlives the process holding it: after a
// restart, or on another replica, a request naming the session finds it and the session
// is opened again (revive.go). Only what initialize established is kept — the entity, the principal, the
// client's initialize parameters —; subscriptions and unsent events are not.
type sessionStore struct {
	pool *pgxpool.Pool
}

// maxSavedInitialize bounds the initialize parameters kept per session: a request body
// may be 1 MiB, and a principal may hold 100 sessions; real clients send well under 4 KiB.
// A session whose parameters are larger works, but does not outlive its process.
const maxSavedInitialize = 64 << 10

// savedSession is a stored session.
type savedSession struct {
	entityURL  string
	principal  string
	initialize json.RawMessage // the client's InitializeParams
}

// save records session id (again: a revived session refreshes its row).
func (st *sessionStore) save(ctx context.Context, id, entityURL, principal string, initialize any) error {
	params, err := json.Marshal(initialize)
	if err != nil {
		return err
	}
	if len(params) > maxSavedInitialize {
		return fmt.Errorf("mcp: the client's initialize parameters are %d bytes, more than the %d kept", len(params), maxSavedInitialize)
	}
	_, err = st.pool.Exec(ctx, sqlSaveSession, id, entityURL, principal, params)
	if err != nil {
		return fmt.Errorf("mcp: save session: %w", err)
	}
	return nil
}

// load returns session id (ok false when there is no such session).
func (st *sessionStore) load(ctx context.Context, id string) (savedSession, bool, error) {
	var s savedSession
	err := st.pool.QueryRow(ctx, sqlLoadSession, id).
		Scan(&s.entityURL, &s.principal, &s.initialize)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("mcp: load session: %w", err)
	}
	return s, true, nil
}

// forget deletes session id: it ended for good.
func (st *sessionStore) forget(ctx context.Context, id string) error {
	_, err := st.pool.Exec(ctx, sqlForgetSession, id)
	return err
}

// touch marks the sessions this process holds as alive, in one statement.
func (st *sessionStore) touch(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := st.pool.Exec(ctx, sqlTouchSessions, ids)
	return err
}

// expire deletes the rows nobody has held for idle: sessions of a process that died and
// that no client came back for.
func (st *sessionStore) expire(ctx context.Context, idle time.Duration) (int64, error) {
	tag, err := st.pool.Exec(ctx, sqlExpireSessions,
		fmt.Sprintf("%d milliseconds", idle.Milliseconds()))
	return tag.RowsAffected(), err
}
