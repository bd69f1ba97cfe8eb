package dssub

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/streamdb"
)

// Electric's wake callbacks (the agents server's POST /_electric/wake-callbacks/:id)
// address a wake by its id and carry the wake's callback token as a bearer token. These
// are the operations behind them; package remote serves the HTTP side.

// ErrWakeNotCurrent answers a callback for a wake that is not (or no longer) any
// subscription's current wake.
var ErrWakeNotCurrent = fail(http.StatusConflict, codeFenced, "The wake is not in flight (it ended)")

// ErrWakeNotFound answers a callback for a wake that is no subscription's current one,
// when its token does not show that the wake ever existed (Electric's 404
// WAKE_CALLBACK_NOT_FOUND for a consumer it has no record of).
var ErrWakeNotFound = fail(http.StatusNotFound, "WAKE_CALLBACK_NOT_FOUND", "Wake callback not found")

// notCurrent says why a callback found no subscription whose current wake is wakeID: a
// token this server minted for that wake shows the wake existed and has ended (409);
// without one, the wake is unknown (404).
func (s *Service) notCurrent(token, wakeID string) error {
	if claims, ok := s.keys.Load().verifyToken(token); ok && claims.WakeID == wakeID {
		return ErrWakeNotCurrent
	}
	return ErrWakeNotFound
}

// WakeCallback is a claim, a heartbeat or a done from a handler, for wake wakeID.
type WakeCallback struct {
	WakeID     string
	Token      string // the wake's callback token (Authorization: Bearer)
	Generation int64  // the wake's epoch
	Acks       []Ack
	Done       bool
	// Effects are the handler's writes, committed in the transaction of the callback's
	// acknowledgement (package runtime decodes them).
	Effects Effects
}

// Effects are writes a handler outside the server commits together with its done, so
// that they and the acknowledgement happen together or not at all, and never under a
// stale epoch.
type Effects interface {
	// Streams are the streams the effects write to; each must be a stream of the wake.
	Streams() []string
	// Apply writes them in tx and returns, by stream, the end offsets of the messages
	// it appended there.
	Apply(ctx context.Context, tx *streamdb.Tx) (map[string][]streamdb.Offset, error)
	// Committed runs after the transaction commits.
	Committed()
}

// Ack moves the cursor of one stream of the wake ("stream" or "path", relative or with
// a leading slash).
type Ack struct {
	Path   string
	Offset string
}

// ClaimWake verifies a handler's claim on the current wake wakeID and mints a write token
// (replacing the subscription's earlier one). The token writes to the streams the wake
// lists while the wake is current; the next wake fences it.
//
// A claim is one statement without a transaction of its own: every wake of a webhook
// handler makes one, and a locked read-then-write would also make the webhook's answer
// wait for it. Only a refused claim reads the subscription again, to say why.
func (s *Service) ClaimWake(ctx context.Context, cb WakeCallback) (writeToken string, err error) {
	claims, ok := s.keys.Load().verifyToken(cb.Token)
	if !ok || claims.WakeID != cb.WakeID || claims.Generation != cb.Generation {
		return "", s.claimRefused(ctx, cb)
	}
	var raw [24]byte
	_, _ = rand.Read(raw[:])
	writeToken = "wt_" + base64.RawURLEncoding.EncodeToString(raw[:])
	stored, err := s.claims.Do(ctx, tokenClaim{wakeID: cb.WakeID, sub: claims.Sub, generation: claims.Generation,
		hash: tokenHash(writeToken)})
	if err != nil {
		return "", fmt.Errorf("dssub: claim a write token: %w", err)
	}
	if !stored {
		return "", s.claimRefused(ctx, cb)
	}
	return writeToken, nil
}

// tokenClaim is one claim's write token, for the statement that stores those of many.
type tokenClaim struct {
	wakeID, sub string
	generation  int64
	hash        []byte
}

// storeTokens stores the write tokens of claims (ClaimWriteTokens) and reports which were
// stored. A statement may not name a subscription twice; a second claim of the same
// subscription in one batch (a handler claiming twice at once) gets a statement of its
// own, after the first.
func (s *Service) storeTokens(ctx context.Context, claims []tokenClaim) ([]bool, error) {
	stored := make([]bool, len(claims))
	if len(claims) == 0 {
		return stored, nil
	}
	var wakes, subs []string
	var gens []int64
	var hashes [][]byte
	seen := make(map[string]bool, len(claims))
	var first, again []int // indexes into claims
	for i, c := range claims {
		if seen[c.sub] {
			again = append(again, i)
			continue
		}
		seen[c.sub] = true
		first = append(first, i)
		wakes, subs, gens, hashes = append(wakes, c.wakeID), append(subs, c.sub), append(gens, c.generation), append(hashes, c.hash)
	}
	rows, err := s.pool.Query(ctx, sqlClaimWriteTokens, wakes, subs, gens, hashes)
	if err != nil {
		return nil, err
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, err
	}
	ok := make(map[string]bool, len(done))
	for _, h := range done {
		ok[string(h)] = true
	}
	for _, i := range first {
		stored[i] = ok[string(claims[i].hash)]
	}
	if len(again) > 0 {
		rest := make([]tokenClaim, len(again))
		for j, i := range again {
			rest[j] = claims[i]
		}
		more, err := s.storeTokens(ctx, rest)
		if err != nil {
			return nil, err
		}
		for j, i := range again {
			stored[i] = more[j]
		}
	}
	return stored, nil
}

// claimRefused says why a claim was refused: the wake is no subscription's current one,
// the token is not the wake's, or the wake moved on to another generation.
func (s *Service) claimRefused(ctx context.Context, cb WakeCallback) error {
	sb, err := scanSub(s.pool.QueryRow(ctx, sqlSelectSubByWake, cb.WakeID), s.clock)
	if err != nil {
		return err
	}
	if sb == nil {
		return s.notCurrent(cb.Token, cb.WakeID)
	}
	if err := s.fence(cb.Token, sb, cb.request(nil)); err != nil {
		return err
	}
	// The wake is current and the token its own, yet the statement refused it: only a
	// later claim of a later generation can have done that, so this one is stale.
	return fail(http.StatusConflict, codeFenced, "Wake generation is stale").WithExtra(map[string]any{"generation": sb.Generation})
}

// Callback is a heartbeat (keeps the lease, moves cursors) or, with Done, the end of the
// wake; it reports whether another wake started at once. A done for a wake that already
// ended is not an error (ended reports it): the consumer is idle or on a later wake. A
// callback for a wake that is not current, without that wake's token, is
// ErrWakeNotFound.
func (s *Service) Callback(ctx context.Context, cb WakeCallback) (nextWake, ended bool, err error) {
	req := cb.request(cb.Acks)
	req.effects = cb.Effects
	req.byWake = true
	if claims, ok := s.keys.Load().verifyToken(cb.Token); ok && cb.Done && cb.Effects == nil &&
		claims.WakeID == cb.WakeID {
		// The common end of a wake: ended together with the dones of other wakes
		// (endWakes). A refused token, effects and heartbeats take the path below.
		ans, err := s.dones.Do(ctx, doneRequest{sub: claims.Sub, wakeID: cb.WakeID, token: cb.Token, req: req,
			primary: claims.Primary})
		if err != nil {
			return false, false, err
		}
		if !ans.alone {
			return ans.nextWake, ans.ended, ans.err
		}
	}
	nextWake, err = s.ack(ctx, cb.WakeID, cb.Token, req, false)
	if errors.Is(err, errNoWake) {
		if err := s.notCurrent(cb.Token, cb.WakeID); !errors.Is(err, ErrWakeNotCurrent) || !cb.Done {
			return false, false, err
		}
		return false, true, nil // a late done of the wake's own handler: harmless
	}
	return nextWake, false, err
}

// CheckWriteToken reports whether token is the write token claimed for the current
// wake of a subscription, and that wake lists streamPath. Every write of a handler asks;
// concurrent checks share one statement (checkTokens).
func (s *Service) CheckWriteToken(ctx context.Context, streamPath, token string) (bool, error) {
	return s.tokenChecks.Do(ctx, tokenCheck{path: streamPath, hash: tokenHash(token)})
}

// tokenCheck is one write's token, for the statement that checks those of many.
type tokenCheck struct {
	path string
	hash []byte
}

// checkTokens answers CheckWriteToken for many writes (WriteTokensHold).
func (s *Service) checkTokens(ctx context.Context, checks []tokenCheck) ([]bool, error) {
	paths, hashes := make([]string, len(checks)), make([][]byte, len(checks))
	for i, c := range checks {
		paths[i], hashes[i] = c.path, c.hash
	}
	rows, err := s.pool.Query(ctx, sqlWriteTokensHold, paths, hashes, streamRoot)
	if err != nil {
		return nil, err
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(checks))
	for _, i := range held {
		out[i-1] = true // ordinals count from 1
	}
	return out, nil
}

func (cb WakeCallback) request(acks []Ack) *ackRequest {
	wakeID := cb.WakeID
	gen := json.Number(strconv.FormatInt(cb.Generation, 10))
	req := &ackRequest{WakeID: &wakeID, Generation: &gen}
	for _, a := range acks {
		path, offset := a.Path, a.Offset
		req.Acks = append(req.Acks, struct {
			Stream *string `json:"stream"`
			Path   *string `json:"path"`
			Offset *string `json:"offset"`
		}{Path: &path, Offset: &offset})
	}
	if cb.Done {
		done := true
		req.Done = &done
	}
	return req
}

// primaryStream is the stream a wake is about: the first listed stream with pending
// work, else the first listed.
func primaryStream(listed []*link) string {
	for _, l := range listed {
		if l.pending() {
			return l.Path
		}
	}
	if len(listed) > 0 {
		return listed[0].Path
	}
	return ""
}

func tokenHash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// PullClaim is a pull-wake wake given to a worker.
type PullClaim struct {
	WakeID     string
	Generation int64
	Token      string // the wake's claim token (for callbacks and the write-token claim)
	StreamPath string // the wake's primary stream, "/<path>"
	TailOffset string
	// StartOffset is where an Electric runtime's wake starts on the primary stream: the
	// offset stamped on its first unacknowledged message.
	StartOffset string
	Streams     []StreamState
}

// StreamState is one stream of a wake: where it is acknowledged to and its tail.
type StreamState struct {
	Path, AckedOffset, TailOffset string
	Pending                       bool
}

// ErrNoPendingWork is a claim with nothing to do.
var ErrNoPendingWork = errors.New("dssub: no pending work")

// ErrNoSubscription is a claim on a subscription that does not exist.
var ErrNoSubscription = errors.New("dssub: no such subscription")

// ClaimPull gives the current (or next) wake of pull-wake subscription id to worker, as
// POST …/claim does; ErrNoPendingWork when there is nothing to do.
func (s *Service) ClaimPull(ctx context.Context, id, worker string) (*PullClaim, error) {
	c, err := s.claimWake(ctx, id, worker)
	var he *httpx.Error
	if errors.As(err, &he) && he.Code == codeNoPendingWork {
		return nil, ErrNoPendingWork
	}
	if errors.As(err, &he) && he.Code == codeNotFound {
		return nil, ErrNoSubscription
	}
	if err != nil {
		return nil, err
	}
	out := &PullClaim{WakeID: c.WakeID, Generation: c.Generation, Token: c.Token, StartOffset: c.PrimaryStart}
	for _, st := range c.Streams {
		out.Streams = append(out.Streams, StreamState{Path: st.Path, AckedOffset: st.AckedOffset, TailOffset: st.TailOffset, Pending: st.HasPending})
		if out.StreamPath == "" && st.HasPending {
			out.StreamPath, out.TailOffset = streamRoot+st.Path, st.TailOffset
		}
	}
	if out.StreamPath == "" && len(c.Streams) > 0 {
		out.StreamPath, out.TailOffset = streamRoot+c.Streams[0].Path, c.Streams[0].TailOffset
	}
	return out, nil
}

// VerifyCallbackToken checks, without a database read, that token is a callback token
// this server signed for wake wakeID at generation gen. Callers use it to refuse a
// stranger before doing costly work for a callback; the callback itself is still fenced
// against the subscription's current wake.
func (s *Service) VerifyCallbackToken(token, wakeID string, gen int64) error {
	if token == "" {
		return fail(http.StatusUnauthorized, codeTokenInvalid, "Missing or malformed Authorization header")
	}
	claims, ok := s.keys.Load().verifyToken(token)
	if !ok || claims.WakeID != wakeID {
		return fail(http.StatusUnauthorized, codeTokenInvalid, "Token invalid")
	}
	if claims.Generation != gen {
		return fail(http.StatusConflict, codeFenced, "Wake generation is stale")
	}
	return nil
}
