package dssub

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/streamdb"
)

// matcher is an immutable snapshot of what commits are matched against: every
// subscription's compiled pattern and every explicitly linked path. Commits read it
// without locks; a change of subscriptions (seen through ds_state.version) builds a new one.
type matcher struct {
	version  int64
	subs     map[string]*subMatch
	explicit map[string][]string // relative path -> subscription ids
	byFirst  map[string][]*subMatch
	wild     []*subMatch // patterns that start with a wildcard
}

type subMatch struct {
	id         string
	glob       *glob  // nil: explicit streams only
	wakeStream string // never linked to its own pull-wake subscription
}

func emptyMatcher() *matcher {
	return &matcher{version: -1, subs: map[string]*subMatch{}, explicit: map[string][]string{}, byFirst: map[string][]*subMatch{}}
}

// match calls fn for every subscription the stream at rel (relative path) belongs to;
// byPattern tells a pattern match (which may need a link) from an explicit one.
func (m *matcher) match(rel string, fn func(subID string, byPattern bool)) {
	for _, id := range m.explicit[rel] {
		fn(id, false)
	}
	if len(m.byFirst) == 0 && len(m.wild) == 0 {
		return
	}
	segs := splitSegments(rel)
	if len(segs) == 0 {
		return
	}
	try := func(sm *subMatch) {
		if sm.wakeStream != rel && sm.glob.match(segs) {
			fn(sm.id, true)
		}
	}
	for _, sm := range m.byFirst[segs[0]] {
		try(sm)
	}
	for _, sm := range m.wild {
		try(sm)
	}
}

// loadMatcher reads subscriptions and explicit links in one snapshot.
func loadMatcher(ctx context.Context, pool streamdb.DB) (*matcher, error) {
	m := emptyMatcher()
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, sqlMatcherVersion).Scan(&m.version); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sqlSelectPatterns)
		if err != nil {
			return err
		}
		for rows.Next() {
			sm := &subMatch{}
			var pattern string
			if err := rows.Scan(&sm.id, &pattern, &sm.wakeStream); err != nil {
				rows.Close()
				return err
			}
			if pattern != "" {
				g, err := compileGlob(pattern)
				if err != nil { // stored patterns were validated; skip rather than stop matching
					continue
				}
				sm.glob = g
				if f := g.firstLiteral(); f != "" {
					m.byFirst[f] = append(m.byFirst[f], sm)
				} else {
					m.wild = append(m.wild, sm)
				}
			}
			m.subs[sm.id] = sm
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, sqlSelectExplicitLinks)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, path string
			if err := rows.Scan(&id, &path); err != nil {
				return err
			}
			m.explicit[path] = append(m.explicit[path], id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("dssub: load subscriptions: %w", err)
	}
	return m, nil
}

// freshIn returns what next has that prev had not: new subscriptions, and explicit links
// added to existing ones (path -> subscription ids). Commits that happened just before
// next was loaded are matched against these again (see recent).
func freshIn(prev, next *matcher) (subs []*subMatch, explicit map[string][]string) {
	explicit = map[string][]string{}
	for id, sm := range next.subs {
		if _, ok := prev.subs[id]; !ok {
			subs = append(subs, sm)
		}
	}
	for path, ids := range next.explicit {
		old := prev.explicit[path]
		for _, id := range ids {
			if !contains(old, id) {
				explicit[path] = append(explicit[path], id)
			}
		}
	}
	return subs, explicit
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// recent remembers this process's latest commits of /v1/stream/ streams for a short
// while. A subscription created (here or in another process) can miss a commit that
// raced with its creation because the commit was matched against the previous matcher;
// when a new matcher is installed, these commits are matched against what is new in it.
type recent struct {
	mu      sync.Mutex
	entries []recentCommit
	next    int
	window  time.Duration
}

type recentCommit struct {
	rel      string
	streamID int64
	at       time.Time
}

func newRecent(size int, window time.Duration) *recent {
	return &recent{entries: make([]recentCommit, size), window: window}
}

func (r *recent) add(rel string, streamID int64, at time.Time) {
	r.mu.Lock()
	r.entries[r.next] = recentCommit{rel: rel, streamID: streamID, at: at}
	r.next = (r.next + 1) % len(r.entries)
	r.mu.Unlock()
}

// since returns the commits not older than the window.
func (r *recent) since(now time.Time) []recentCommit {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recentCommit
	for _, e := range r.entries {
		if e.rel != "" && now.Sub(e.at) <= r.window {
			out = append(out, e)
		}
	}
	return out
}
