package dssub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/streamdb"
)

// The operations behind the routes: each runs in one transaction and returns the
// state to present or an *httpx.Error the route answers with. http.go only reads
// requests and writes answers.

// create makes subscription id from in, or returns the existing one when its
// configuration is the same (created false); a different configuration is a 409.
func (s *Service) create(ctx context.Context, id string, in *createInput, baseURL string, who principal.Principal) (*sub, []*link, bool, error) {
	hash := in.hash()
	var sb *sub
	var links []*link
	created := false
	err := s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		created = false
		existing, err := readSub(ctx, tx, id, s.clock)
		if err != nil {
			return err
		}
		if existing == nil {
			if in.Type == typeWebhook {
				if why := s.opts.Outbound.CheckURL(in.WebhookURL, "webhook.url"); why != "" {
					return fail(http.StatusBadRequest, codeURLRejected, why)
				}
			}
			if s.opts.MaxPerPrincipal > 0 && !quota.Exempt(who) {
				var n int
				if err := tx.QueryRow(ctx, sqlCountSubscriptionsBy, who.String(), s.opts.MaxPerPrincipal+1).Scan(&n); err != nil {
					return err
				}
				if err := quota.Check(who, n, 1, s.opts.MaxPerPrincipal, "subscriptions", "ENTITYD_QUOTA_SUBSCRIPTIONS"); err != nil {
					return err
				}
			}
			tag, err := tx.Exec(ctx, sqlInsertSubscription,
				id, in.Type, in.Pattern, in.WebhookURL, in.WakeStream, in.LeaseTTLms, in.Description, hash, baseURL, createdBy(who))
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				created = true
				if err := s.linkInitial(ctx, tx, id, in); err != nil {
					return err
				}
				if err := bumpVersion(ctx, tx); err != nil {
					return err
				}
			}
			if existing, err = readSub(ctx, tx, id, s.clock); err != nil {
				return err
			}
		}
		if !bytes.Equal(existing.ConfigHash, hash) {
			return fail(http.StatusConflict, codeAlreadyExists, "Subscription already exists with a different configuration")
		}
		sb = existing
		links, err = loadLinks(ctx, tx, id, false)
		return err
	})
	if err != nil {
		return nil, nil, false, err
	}
	if created {
		s.log.Info("subscription created", zap.String("subscription", id), zap.String("type", in.Type),
			zap.String("pattern", in.Pattern), zap.Int("streams", len(links)))
		s.changed(ctx)
	}
	return sb, links, created, nil
}

// linkInitial links a new subscription's streams: the explicit ones, and every existing
// stream its pattern matches, at their current tails (work that exists before the
// subscription is not pending; a stream that starts matching later is pending from "-1").
func (s *Service) linkInitial(ctx context.Context, tx *streamdb.Tx, id string, in *createInput) error {
	if len(in.Streams) > 0 {
		if err := linkExplicit(ctx, tx, id, in.Streams); err != nil {
			return err
		}
	}
	if in.Pattern == "" {
		return nil
	}
	g, err := compileGlob(in.Pattern)
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, sqlStreamsUnderPattern, streamRoot+g.literalPrefix())
	if err != nil {
		return err
	}
	var paths []string
	var ids, seqs, poss []int64
	for rows.Next() {
		var sid, seq, pos int64
		var path string
		if err := rows.Scan(&sid, &path, &seq, &pos); err != nil {
			rows.Close()
			return err
		}
		rel := strings.TrimPrefix(path, streamRoot)
		if rel == in.WakeStream || reservedPath(rel) || !g.match(splitSegments(rel)) {
			continue
		}
		paths, ids, seqs, poss = append(paths, rel), append(ids, sid), append(seqs, seq), append(poss, pos)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(paths) == 0 {
		return nil
	}
	_, err = tx.Exec(ctx, sqlLinkGlobMatches, id, paths, ids, seqs, poss)
	return err
}

// changed installs a subscription change in this process at once (others see the
// version bump within a poll interval).
func (s *Service) changed(ctx context.Context) {
	if err := s.refresh(context.WithoutCancel(ctx)); err != nil {
		s.logs.reload.Log(s.log, zapcore.WarnLevel, "could not reload subscriptions; retrying at the next poll", zap.Error(err))
	}
}

func errNoSubscription() error {
	return fail(http.StatusNotFound, codeNotFound, "Subscription not found")
}

// lockExisting is lockSub for an operation on a subscription that must exist (404).
func lockExisting(ctx context.Context, tx *streamdb.Tx, id string, clk clock.Clock) (*sub, error) {
	sb, err := lockSub(ctx, tx, id, clk)
	if err == nil && sb == nil {
		err = errNoSubscription()
	}
	return sb, err
}

// get reads a subscription and its links.
func (s *Service) get(ctx context.Context, id string) (*sub, []*link, error) {
	sb, err := readSub(ctx, s.pool, id, s.clock)
	if err != nil {
		return nil, nil, err
	}
	if sb == nil {
		return nil, nil, errNoSubscription()
	}
	links, err := loadLinks(ctx, s.pool, id, false)
	if err != nil {
		return nil, nil, err
	}
	return sb, links, nil
}

// delete removes a subscription; deleting one that does not exist is not an error.
func (s *Service) delete(ctx context.Context, id string) error {
	deleted := false
	err := s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		tag, err := tx.Exec(ctx, sqlDeleteSubscription, id)
		if err != nil {
			return err
		}
		deleted = tag.RowsAffected() > 0
		if deleted {
			return bumpVersion(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if deleted {
		s.log.Info("subscription deleted", zap.String("subscription", id))
		s.changed(ctx)
	}
	return nil
}

// follow links explicit streams to a subscription.
func (s *Service) follow(ctx context.Context, id string, paths []string) error {
	err := s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		sb, err := lockExisting(ctx, tx, id, s.clock)
		if err != nil {
			return err
		}
		if sb.WakeStream != "" && contains(paths, sb.WakeStream) {
			return fail(http.StatusBadRequest, codeInvalidRequest, "a subscription cannot follow its own wake_stream")
		}
		if err := linkExplicit(ctx, tx, id, paths); err != nil {
			return err
		}
		return bumpVersion(ctx, tx)
	})
	if err != nil {
		return err
	}
	s.changed(ctx)
	return nil
}

// unfollow unlinks an explicit stream (a stream the pattern still matches stays linked).
func (s *Service) unfollow(ctx context.Context, id, path string) error {
	err := s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		if _, err := lockExisting(ctx, tx, id, s.clock); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, sqlUnmarkExplicit, id, path)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, sqlDeleteUnlinkedStreams, id, path); err != nil {
			return err
		}
		return bumpVersion(ctx, tx)
	})
	if err != nil {
		return err
	}
	s.changed(ctx)
	return nil
}

// ackRequest is the body of callback, ack and release.
type ackRequest struct {
	WakeID     *string      `json:"wake_id"`
	Generation *json.Number `json:"generation"`
	Acks       []struct {
		Stream *string `json:"stream"`
		Path   *string `json:"path"`
		Offset *string `json:"offset"`
	} `json:"acks"`
	Done *bool `json:"done"`
	// effects are a remote handler's writes, committed with the acknowledgement.
	effects Effects
	// byWake: the request names the subscription by its current wake (a wake callback).
	byWake bool
}

// errNoWake is a callback for a wake that is no subscription's current wake.
var errNoWake = errors.New("dssub: no subscription has this wake")

// fence checks that a bearer token and a request are for the subscription's current wake.
func (s *Service) fence(token string, sb *sub, req *ackRequest) error {
	if token == "" {
		return fail(http.StatusUnauthorized, codeTokenInvalid, "Missing or malformed Authorization header")
	}
	claims, ok := s.keys.Load().verifyToken(token)
	if !ok || claims.Sub != sb.ID {
		return fail(http.StatusUnauthorized, codeTokenInvalid, "Token invalid")
	}
	var gen int64 = -1
	if req.Generation != nil {
		if g, err := req.Generation.Int64(); err == nil {
			gen = g
		}
	}
	if sb.WakeID == "" || claims.Generation != sb.Generation || claims.WakeID != sb.WakeID ||
		gen != sb.Generation || req.WakeID == nil || *req.WakeID != sb.WakeID {
		return fail(http.StatusConflict, codeFenced, "Wake generation is stale").WithExtra(map[string]any{"generation": sb.Generation})
	}
	return nil
}

// applyAcks moves the cursors of req.Acks (all or none).
func applyAcks(ctx context.Context, tx *streamdb.Tx, sb *sub, links []*link, req *ackRequest) error {
	if len(req.Acks) == 0 {
		return nil
	}
	byPath := make(map[string]*link, len(links))
	for _, l := range links {
		byPath[l.Path] = l
	}
	invalid := func(msg string) error { return fail(http.StatusConflict, codeInvalidOffset, msg) }
	type move struct {
		l *link
		c cursor
	}
	moves := make([]move, 0, len(req.Acks))
	for _, a := range req.Acks {
		path := ""
		if a.Stream != nil {
			path = *a.Stream
		} else if a.Path != nil {
			path = *a.Path
		}
		l := byPath[normalizePath(path)]
		if l == nil {
			return invalid("Ack references an unknown subscription stream")
		}
		if a.Offset == nil {
			return invalid("Ack needs an offset")
		}
		off, kind, err := streamdb.ParseOffset(*a.Offset)
		if err != nil || kind != streamdb.OffsetConcrete {
			return invalid("Ack offset must be an offset of the stream (not -1 or now)")
		}
		c := cursorOf(off)
		if c.less(l.Acked) {
			return invalid("Ack offset regresses the committed cursor")
		}
		if cursorOf(l.Tail).less(c) {
			return invalid("Ack offset is beyond the stream's tail")
		}
		moves = append(moves, move{l, c})
	}
	for _, m := range moves {
		setAcked(tx, sb.ID, m.l, m.c)
		m.l.Acked = m.c
	}
	return nil
}

// ack is a callback (webhook) or ack (pull-wake): move cursors, keep the lease, and with
// done end the wake (starting the next one when work is pending, reported as nextWake).
// id names the subscription, or with req.byWake its current wake.
func (s *Service) ack(ctx context.Context, id, token string, req *ackRequest, pull bool) (nextWake bool, err error) {
	var job *delivery
	var sb *sub
	err = s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		job, nextWake = nil, false
		var links []*link
		var err error
		if req.byWake {
			// The links are read with the lock, for the subscription the token names (a
			// token that names another is refused by the fence below).
			linksOf := ""
			if claims, ok := s.keys.Load().verifyToken(token); ok {
				linksOf = claims.Sub
			}
			if sb, links, err = lockWithLinks(ctx, tx, sqlLockSubByWake, id, linksOf, s.clock); err == nil && sb == nil {
				err = errNoWake
			}
		} else if sb, links, err = lockWithLinks(ctx, tx, sqlLockSub, id, id, s.clock); err == nil && sb == nil {
			err = errNoSubscription()
		}
		if err != nil {
			return err
		}
		if pull && sb.Type != typePullWake {
			return fail(http.StatusBadRequest, codeInvalidRequest, "Subscription is not pull-wake")
		}
		if err := s.fence(token, sb, req); err != nil {
			return err
		}
		if links == nil {
			if links, err = loadLinks(ctx, tx, sb.ID, true); err != nil {
				return err
			}
		}
		if req.effects != nil {
			if err := applyEffects(ctx, tx, links, req); err != nil {
				return err
			}
		}
		if err := applyAcks(ctx, tx, sb, links, req); err != nil {
			return err
		}
		if req.Done != nil && *req.Done {
			primary := ""
			if claims, ok := s.keys.Load().verifyToken(token); ok {
				primary = claims.Primary
			}
			var retryAt time.Time
			if primary != "" { // a done is about its own wake's primary stream only
				if retryAt, _, err = s.failedWake(ctx, tx, sb, nil, primary, "the handler's done left its work unacknowledged"); err != nil {
					return err
				}
			}
			if err := s.wakeEnded(ctx, tx, primary); err != nil {
				return err
			}
			endWake(sb)
			retryAfter(sb, retryAt)
			if job, err = s.startWake(ctx, tx, sb, links); err != nil {
				return err
			}
			// The wake's write token row stays until the next claim replaces it: it
			// authorises nothing once its wake is not current (WriteTokensHold).
			nextWake = sb.WakeID != ""
		} else {
			lease := sb.now.Add(sb.leaseTTL())
			sb.LeaseUntil, sb.DueAt = &lease, &lease
			if sb.Phase == phaseDelivering { // the receiver called back before answering
				sb.Phase, sb.AttemptOwner, sb.AttemptUntil, sb.NextAttemptAt = phaseOpen, "", nil, nil
				sb.RetryCount, sb.Status, sb.LastError = 0, statusActive, ""
			}
		}
		saveSub(tx, sb)
		return nil
	})
	if err != nil {
		return false, err
	}
	if req.effects != nil {
		req.effects.Committed()
	}
	s.committed(sb, job)
	return nextWake, nil
}

// claimed is what a pull-wake worker gets for its claim.
type claimed struct {
	WakeID     string
	Generation int64
	Token      string
	Streams    []streamInfo
	LeaseTTLms int64
	// PrimaryStart is startOffset of the primary stream (for Electric's runtime).
	PrimaryStart string
}

// claimWake gives the current wake of a pull-wake subscription to worker (starting one
// when work is pending), unless another worker's lease still holds it.
func (s *Service) claimWake(ctx context.Context, id, worker string) (*claimed, error) {
	var out *claimed
	err := s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		sb, err := lockExisting(ctx, tx, id, s.clock)
		if err != nil {
			return err
		}
		if sb.Type != typePullWake {
			return fail(http.StatusBadRequest, codeInvalidRequest, "Subscription is not pull-wake")
		}
		if sb.Holder != "" {
			if sb.LeaseUntil != nil && sb.LeaseUntil.After(sb.now) {
				return fail(http.StatusConflict, codeAlreadyClaimed, "The wake is claimed by another worker").WithExtra(map[string]any{"current_holder": sb.Holder, "generation": sb.Generation})
			}
			retryAt, _, err := s.failedWake(ctx, tx, sb, nil, "", "the worker's lease lapsed before its done")
			if err != nil {
				return err
			}
			endWake(sb) // the previous holder's lease lapsed
			retryAfter(sb, retryAt)
		}
		links, err := loadLinks(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if sb.WakeID == "" {
			if !anyPending(links) {
				return fail(http.StatusConflict, codeNoPendingWork, "Subscription has no pending work")
			}
			if _, err := s.startWake(ctx, tx, sb, links); err != nil {
				return err
			}
			if sb.WakeID == "" { // held back after failed wakes (retryAfter)
				saveSub(tx, sb)
				return fail(http.StatusConflict, codeNoPendingWork, "Subscription has no pending work yet")
			}
		}
		listed := wakeLinks(links)
		snapshot(tx, id, listed)
		start, err := primaryStart(ctx, tx, listed, primaryStream(listed))
		if err != nil {
			return err
		}
		lease := sb.now.Add(sb.leaseTTL())
		sb.Phase, sb.Holder, sb.LeaseUntil, sb.DueAt = phaseClaimed, worker, &lease, &lease
		out = &claimed{
			WakeID:     sb.WakeID,
			Generation: sb.Generation,
			Token: s.keys.Load().mintToken(tokenClaims{Sub: id, Generation: sb.Generation, WakeID: sb.WakeID,
				Primary: primaryStream(listed)}),
			Streams:      infos(listed),
			LeaseTTLms:   sb.LeaseTTLms,
			PrimaryStart: start,
		}
		saveSub(tx, sb)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// releaseWake hands a claimed pull-wake back before its lease ends.
func (s *Service) releaseWake(ctx context.Context, id, token string, req *ackRequest) error {
	var sb *sub
	err := s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		var err error
		if sb, err = lockExisting(ctx, tx, id, s.clock); err != nil {
			return err
		}
		if sb.Type != typePullWake {
			return fail(http.StatusBadRequest, codeInvalidRequest, "Subscription is not pull-wake")
		}
		if err := s.fence(token, sb, req); err != nil {
			return err
		}
		endWake(sb)
		if _, err := s.startWake(ctx, tx, sb, nil); err != nil {
			return err
		}
		saveSub(tx, sb)
		return nil
	})
	if err != nil {
		return err
	}
	s.committed(sb, nil)
	return nil
}

// createdBy is who a subscription is recorded as made by ("" when no principal was
// asked for: dispatch policies make their own).
func createdBy(p principal.Principal) string {
	if p.Kind == "" {
		return ""
	}
	return p.String()
}
