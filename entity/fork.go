package entity

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/streamdb"
)

// Fork limits and defaults.
const (
	// DefaultForkWait is how long a fork waits for its subtree to be idle (the reference's
	// 120 s); MaxForkWait bounds what a request may ask for.
	DefaultForkWait = 120 * time.Second
	MaxForkWait     = 120 * time.Second
	// DefaultMaxForkEntities bounds the entities one fork copies (the root and its
	// descendants).
	DefaultMaxForkEntities = 1000
	// forkLockMargin keeps a fork's lock rows alive past its wait, for the copy itself;
	// the rows of a fork whose process died lapse after wait + margin.
	forkLockMargin = 60 * time.Second
	// forkPollMax is the longest pause between two looks at the subtree's statuses
	// while waiting for it to be idle (the reference polls every 250 ms).
	forkPollMax = 250 * time.Millisecond
	// forkingStatus is what the send admission reports for an entity under a fork.
	forkingStatus = "forking"
)

// Fork errors (besides ErrNotFound, ErrDuplicate and ErrForkInProgress).
var (
	ErrForkNotTopLevel = errors.New("only top-level entities can be forked")
	ErrForkTerminal    = errors.New("cannot fork a stopped or killed entity")
)

// ForkTooLargeError refuses a fork whose subtree has more entities than allowed.
type ForkTooLargeError struct{ Limit int }

func (e *ForkTooLargeError) Error() string {
	return fmt.Sprintf("the entity and its descendants are more than %d entities; a fork copies at most %d", e.Limit, e.Limit)
}

// ForkWaitTimeoutError reports the entities still active when the wait ran out.
type ForkWaitTimeoutError struct{ Active []string }

func (e *ForkWaitTimeoutError) Error() string {
	return "timed out waiting for the subtree to become idle"
}

// ForkPointerError refuses a fork pointer that names no event of the source's stream.
type ForkPointerError struct{ Message string }

func (e *ForkPointerError) Error() string { return e.Message }

// ForkPointer names an event of the root's main stream, as Electric's runtime and UI
// mint it: Offset is the stream offset a read ended at (nil: the stream's start), Sub
// counts events past it (1 is the first). The fork keeps events up to that one.
type ForkPointer struct {
	Offset *string
	Sub    int64
}

// ForkRequest describes a fork of the entity at Source and its descendants.
type ForkRequest struct {
	Source string
	// InstanceID is the root copy's id ("" picks "<id>-fork-<random>"); the copies of
	// descendants always get generated ids.
	InstanceID string
	// Pointer or LatestCompletedRun cut the root's stream at an event (else the fork
	// takes it whole, once the subtree is idle).
	Pointer            *ForkPointer
	LatestCompletedRun bool
	// Parent, when set, makes the root copy a child of that entity.
	Parent string
	// Tags are set on the root copy over the source's.
	Tags      map[string]string
	CreatedBy string
	// Wait bounds the wait for an idle subtree (0: none; the API's default is
	// DefaultForkWait).
	Wait time.Duration
	// MaxEntities bounds the entities copied (0: DefaultMaxForkEntities).
	MaxEntities int
	// InTx runs in the copy's transaction once every copy is written, with the copies
	// (the root first) and the map from source URL to copy URL.
	InTx func(ctx context.Context, tx *streamdb.Tx, res *ForkResult, urls map[string]string) error
}

// ForkResult is what a fork made.
type ForkResult struct {
	Root     *Entity
	Entities []*Entity // the root copy first, then the descendants' copies, parents first
	// Sources maps each copy's URL to its source's; ForkSeq each copy's URL to the last
	// message it shares with its source.
	Sources map[string]string
	ForkSeq map[string]int64
	Txid    int64
}

// errForkRetry sends the copy back to waiting: the subtree changed or became active
// between the last look and the lock.
var errForkRetry = errors.New("entity: fork subtree changed; wait again")

// Fork copies an entity and its descendants: rows (type revision, schema snapshots,
// tags, args, dispatch policy), streams (as Durable Streams forks: the copies read the
// source's messages up to the fork point, nothing is copied) and slash commands, with
// reconciling events appended to each copy (entity_created with the copy's parent and
// args; child manifests and statuses naming the copies). The root must be top level.
//
// Without a pointer the whole subtree must be idle (or paused) and the fork waits for
// that; with one, the root is cut at the pointer's event whatever it is doing, and only
// the descendants it then still names as children are copied (they must be idle).
// While a fork waits and copies, sends to the entities it waits for are refused with
// ErrForkInProgress; the copy itself is one transaction that holds the subtree's rows
// and streams, so what a copy contains is exactly its source up to the fork point.
func (r *Registry) Fork(ctx context.Context, req ForkRequest) (*ForkResult, error) {
	wait := max(req.Wait, 0)
	limit := req.MaxEntities
	if limit <= 0 {
		limit = DefaultMaxForkEntities
	}
	root, err := r.Get(ctx, req.Source)
	if err != nil {
		return nil, err
	}
	if root.Terminal() {
		return nil, ErrForkTerminal
	}
	if root.Parent != nil {
		return nil, ErrForkNotTopLevel
	}
	tree, err := r.forkSubtree(ctx, r.pool, root.URL, limit)
	if err != nil {
		return nil, err
	}
	cut, err := r.forkCut(ctx, root, req)
	if err != nil {
		return nil, err
	}
	if cut != nil && len(tree) > 1 {
		kept, err := r.childrenAt(ctx, root, cut.seq)
		if err != nil {
			return nil, err
		}
		tree = keepChildren(tree, root.URL, kept)
	}
	// the entities whose quiet the fork needs: all of them, or below a cut root only its
	// descendants (the root's stream is cut at a fixed event)
	waitFor := tree
	if cut != nil {
		waitFor = tree[1:]
	}
	forkID := randomHex(8)
	if err := r.takeForkLocks(ctx, urlsOf(waitFor), forkID, wait+forkLockMargin); err != nil {
		return nil, err
	}
	defer func() {
		// normally gone with the copy's commit; a failed fork gives them back here
		_, _ = r.pool.Exec(context.WithoutCancel(ctx), sqlReleaseForkLocks, forkID)
	}()

	deadline := time.Now().Add(wait)
	pause := 5 * time.Millisecond
	for {
		if err := r.waitIdle(ctx, urlsOf(waitFor), deadline, &pause); err != nil {
			return nil, err
		}
		res, err := r.copySubtree(ctx, req, tree, cut, forkID)
		if errors.Is(err, errForkRetry) {
			if cut == nil {
				// a descendant may have been spawned meanwhile: take the subtree anew
				if tree, err = r.forkSubtree(ctx, r.pool, root.URL, limit); err != nil {
					return nil, err
				}
				waitFor = tree
				if err := r.takeForkLocks(ctx, urlsOf(tree), forkID, wait+forkLockMargin); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range res.Entities {
			r.known.put(e)
		}
		return res, nil
	}
}

// querier is what the fork's reads need of the pool or of a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// forkSubtree lists the entity at url and its descendants, parents first.
func (r *Registry) forkSubtree(ctx context.Context, q querier, url string, limit int) ([]*Entity, error) {
	rows, err := q.Query(ctx, sqlForkSubtree, url, limit+1)
	if err != nil {
		return nil, fmt.Errorf("entity: fork subtree: %w", err)
	}
	defer rows.Close()
	var out []*Entity
	for rows.Next() {
		e, err := scanEntity(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	if len(out) > limit {
		return nil, &ForkTooLargeError{Limit: limit}
	}
	return out, nil
}

// takeForkLocks marks urls as under fork forkID; a live mark of another fork on any of
// them refuses this one (ErrForkInProgress), leaving none of this fork's marks behind.
func (r *Registry) takeForkLocks(ctx context.Context, urls []string, forkID string, ttl time.Duration) error {
	if len(urls) == 0 {
		return nil
	}
	return r.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		rows, err := tx.Query(ctx, sqlTakeForkLocks, urls, forkID, ttl.Milliseconds())
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if n < len(urls) {
			return ErrForkInProgress // the transaction rolls back this fork's marks
		}
		return nil
	})
}

// waitIdle returns once none of urls is running (idle or paused), or fails: an entity
// ended (ErrForkTerminal), the deadline passed (ForkWaitTimeoutError), ctx ended.
func (r *Registry) waitIdle(ctx context.Context, urls []string, deadline time.Time, pause *time.Duration) error {
	for {
		active, err := r.activeOf(ctx, r.pool, urls)
		if err != nil {
			return err
		}
		if len(active) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return &ForkWaitTimeoutError{Active: active}
		}
		t := time.NewTimer(min(*pause, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		*pause = min(*pause*2, forkPollMax)
	}
}

// activeOf returns the urls whose entities are neither idle nor paused; an ended or
// vanished one is an error.
func (r *Registry) activeOf(ctx context.Context, q querier, urls []string) ([]string, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, sqlSelectEntities, urls)
	if err != nil {
		return nil, fmt.Errorf("entity: fork statuses: %w", err)
	}
	defer rows.Close()
	seen := 0
	var active []string
	for rows.Next() {
		e, err := scanEntity(rows)
		if err != nil {
			return nil, err
		}
		seen++
		switch {
		case e.Terminal():
			return nil, ErrForkTerminal
		case e.Status != StatusIdle && e.Status != StatusPaused:
			active = append(active, e.URL)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if seen < len(urls) {
		return nil, ErrNotFound
	}
	return active, nil
}

func urlsOf(es []*Entity) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.URL
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// forkInstanceID is the id of the copy of an entity whose id is id: "<id>-fork-<suffix>",
// the id shortened to keep it within maxID bytes.
func forkInstanceID(id, suffix string, maxID int) string {
	tail := "-fork-" + suffix
	if len(id)+len(tail) > maxID {
		id = id[:maxID-len(tail)]
	}
	return id + tail
}

// MaxInstanceIDLength bounds instance ids (spawn's and fork's rule).
const MaxInstanceIDLength = 256

// lockSubtree locks the rows of tree in tx and checks what the wait saw still holds:
// the same entities, none of waitFor active (errForkRetry otherwise).
func (r *Registry) lockSubtree(ctx context.Context, tx *streamdb.Tx, tree []*Entity, waitFor map[string]bool, whole bool) (map[string]*Entity, error) {
	rows, err := tx.Query(ctx, sqlLockForkSubtree, urlsOf(tree))
	if err != nil {
		return nil, err
	}
	locked := map[string]*Entity{}
	for rows.Next() {
		e, err := scanEntity(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		locked[e.URL] = e
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(locked) < len(tree) {
		return nil, errForkRetry
	}
	for url, e := range locked {
		if e.Terminal() {
			return nil, ErrForkTerminal
		}
		if waitFor[url] && e.Status != StatusIdle && e.Status != StatusPaused {
			return nil, errForkRetry
		}
	}
	if whole {
		// no descendant was spawned since the subtree was listed
		now, err := r.forkSubtree(ctx, tx, tree[0].URL, len(tree)+1)
		if err != nil {
			var tooLarge *ForkTooLargeError
			if errors.As(err, &tooLarge) {
				return nil, errForkRetry
			}
			return nil, err
		}
		if len(now) != len(tree) {
			return nil, errForkRetry
		}
	}
	return locked, nil
}

// copyInsert writes the row of the copy of src at url (ErrDuplicate when taken).
func copyInsert(ctx context.Context, tx *streamdb.Tx, src *Entity, url, id string, streamID int64,
	tags map[string]string, args json.RawMessage, parent *string, createdBy string) (*Entity, error) {
	var token [24]byte
	_, _ = rand.Read(token[:])
	var cb *string
	if createdBy != "" {
		cb = &createdBy
	} else {
		cb = src.CreatedBy
	}
	if tags == nil {
		tags = map[string]string{}
	}
	e, err := scanEntity(tx.QueryRow(ctx, sqlInsertForkedEntity, src.URL, url, id, streamID,
		hex.EncodeToString(token[:]), tags, parent, cb, nullable(args)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrDuplicate
	}
	return e, err
}

// forkStreams forks the main and slash-command collection streams of src for the copy
// at url; the main stream is cut at cut when given. It returns the main stream's Meta.
func forkStreams(ctx context.Context, tx *streamdb.Tx, src *Entity, url string, cut *forkCut) (*streamdb.Meta, error) {
	cfg := streamdb.CreateConfig{ContentType: "application/json", ForkFrom: src.MainStream(),
		Access: streamdb.Access{Kind: streamdb.AccessEntity, Entity: url}}
	if cut != nil {
		at := cut.end
		cfg.ForkOffset = &at
	}
	m, created, err := tx.Create(ctx, entitypath.Main(url), cfg, nil)
	if err != nil {
		if errors.Is(err, streamdb.ErrExists) || isUniqueViolation(err) {
			return nil, ErrDuplicate
		}
		return nil, fmt.Errorf("entity: fork stream of %s: %w", src.URL, err)
	}
	if !created {
		return nil, ErrDuplicate
	}
	// The collection stream is taken at its head: it follows the slash_commands rows,
	// which are copied as they are now.
	ccfg := streamdb.CreateConfig{ContentType: "application/json", ForkFrom: entitypath.Collection(src.URL),
		Access: streamdb.Access{Kind: streamdb.AccessEntity, Entity: url}}
	_, created, err = tx.Create(ctx, entitypath.Collection(url), ccfg, nil)
	if errors.Is(err, streamdb.ErrForkSourceMissing) || errors.Is(err, streamdb.ErrForkSourceGone) {
		ccfg.ForkFrom = ""
		_, created, err = tx.Create(ctx, entitypath.Collection(url), ccfg, nil)
	}
	if err != nil {
		if errors.Is(err, streamdb.ErrExists) {
			return nil, ErrDuplicate
		}
		return nil, fmt.Errorf("entity: fork collection stream of %s: %w", src.URL, err)
	}
	if !created {
		return nil, ErrDuplicate
	}
	return m, nil
}
