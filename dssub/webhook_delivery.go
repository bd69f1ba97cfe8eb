package dssub

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/entityd/entityd/internal/coalesce"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/streamdb"
)

// delivery is one webhook request this process is to make.
type delivery struct {
	subID, wakeID string
	generation    int64
	url           string
	body          webhookBody // encoded when it is sent (enrich)
	// for an Enricher: the primary stream (relative) and its tail, the callback token,
	// and the origin the subscription was created through
	primary, primaryTail, token, origin string
	// primaryStart is where an Electric runtime's wake starts on the primary stream
	// (startOffset); set only when wakes are enriched.
	primaryStart string
	// startBy is when the request must have started (see targets.go); target is the
	// webhook URL's origin, whose slot the delivery holds
	startBy time.Time
	target  string
}

// webhookBody is what a webhook receives.
type webhookBody struct {
	SubscriptionID string       `json:"subscription_id"`
	WakeID         string       `json:"wake_id"`
	Generation     int64        `json:"generation"`
	Streams        []streamInfo `json:"streams"`
	CallbackURL    string       `json:"callback_url"`
	CallbackToken  string       `json:"callback_token"`
}

// wakeRecord is what a pull-wake subscription appends to its wake stream.
type wakeRecord struct {
	Type           string `json:"type"`
	SubscriptionID string `json:"subscription_id"`
	WakeID         string `json:"wake_id"`
	Generation     int64  `json:"generation"`
	Stream         string `json:"stream"`
	TS             int64  `json:"ts"`
}

func newWakeID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "w_" + hex.EncodeToString(b[:])
}

// evaluate moves subscriptions along: starts a wake for pending work, retries or hands
// back a webhook attempt, ends a lapsed lease. The subscriptions ids name are evaluated
// together: one read, and one transaction for those that need one.
func (s *Service) evaluate(ctx context.Context, ids []string) error {
	// Most evaluations come from commits to streams of a subscription whose wake is in
	// flight: a read without a lock or a write settles those.
	cur, err := s.readSubs(ctx, ids)
	if err != nil {
		return err
	}
	todo := make([]string, 0, len(ids))
	for i, sb := range cur {
		if sb != nil && !(sb.busy() && (sb.DueAt == nil || sb.DueAt.After(sb.now))) {
			todo = append(todo, ids[i])
		}
	}
	if len(todo) == 0 {
		return nil
	}
	type after struct {
		sb  *sub
		job *delivery
	}
	var afters []after
	var alone []string
	err = s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		afters, alone = afters[:0], alone[:0]
		subs, links, err := lockManyWithLinks(ctx, tx, todo, s.clock)
		if err != nil {
			return err
		}
		for _, i := range stepOrder(len(todo), func(i int) string { return todo[i] }, subs) {
			id := todo[i]
			sb := subs[id]
			if sb == nil || sb.Type == typePullWake {
				// held by another transaction, deleted, or a pull-wake, whose wake would
				// be appended to its wake stream: alone (see endWakes)
				alone = append(alone, id)
				continue
			}
			job, err := s.step(ctx, tx, sb, links[id])
			if err != nil {
				return err
			}
			saveSub(tx, sb)
			afters = append(afters, after{sb, job})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, a := range afters {
		s.committed(a.sb, a.job)
	}
	for _, id := range alone {
		if err := s.evaluateAlone(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// evaluateAlone evaluates one subscription that a batch found held by another
// transaction: in a transaction of its own, which waits for the lock.
func (s *Service) evaluateAlone(ctx context.Context, id string) error {
	var job *delivery
	var sb *sub
	err := s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		job = nil
		var links []*link
		var err error
		if sb, links, err = lockWithLinks(ctx, tx, sqlLockSub, id, id, s.clock); err != nil || sb == nil {
			return err
		}
		if job, err = s.step(ctx, tx, sb, links); err != nil {
			return err
		}
		saveSub(tx, sb)
		return nil
	})
	if err == nil {
		s.committed(sb, job)
	}
	return err
}

// committed follows a transaction that advanced sb: it starts the webhook request the
// transaction took on, and looks again at a subscription whose wake ended with nothing
// pending (a commit that raced with the transaction skipped the subscription as busy).
func (s *Service) committed(sb *sub, job *delivery) {
	s.launch(job)
	if sb != nil && sb.endedWake() {
		s.enqueue(sb.ID)
	}
}

// step applies the clock to a locked subscription, whose links the caller may have read
// (nil: not read). The caller saves sb.
func (s *Service) step(ctx context.Context, tx *streamdb.Tx, sb *sub, links []*link) (*delivery, error) {
	now := sb.now
	switch {
	case sb.WakeID == "":
		return s.startWake(ctx, tx, sb, links)
	case sb.Phase == phaseDelivering:
		if sb.AttemptOwner != "" && sb.AttemptUntil != nil && sb.AttemptUntil.After(now) {
			sb.DueAt = sb.AttemptUntil // another attempt is under way
			return nil, nil
		}
		if sb.NextAttemptAt != nil && sb.NextAttemptAt.After(now) {
			sb.DueAt = sb.NextAttemptAt
			return nil, nil
		}
		return s.takeAttempt(ctx, tx, sb, links)
	case sb.Phase == phaseClaimed || (sb.Phase == phaseOpen && sb.Type == typeWebhook):
		if sb.LeaseUntil != nil && sb.LeaseUntil.After(now) {
			sb.DueAt = sb.LeaseUntil
			return nil, nil
		}
		s.log.Info("wake lease expired", zap.String("subscription", sb.ID), zap.String("wake_id", sb.WakeID),
			zap.Int64("generation", sb.Generation), zap.String("holder", sb.Holder))
		retryAt, _, err := s.failedWake(ctx, tx, sb, links, "", "the handler's lease lapsed before its done")
		if err != nil {
			return nil, err
		}
		endWake(sb)
		retryAfter(sb, retryAt)
		return s.startWake(ctx, tx, sb, links)
	default: // a pull-wake announced on its wake stream, waiting to be claimed
		sb.DueAt = nil
		return nil, nil
	}
}

// startWake starts the next wake if any stream has pending work: a webhook is delivered
// (the returned delivery), a pull-wake is announced on its wake stream.
func (s *Service) startWake(ctx context.Context, tx *streamdb.Tx, sb *sub, links []*link) (*delivery, error) {
	if links == nil {
		var err error
		if links, err = loadLinks(ctx, tx, sb.ID, true); err != nil {
			return nil, err
		}
	}
	if sb.NextAttemptAt != nil && sb.NextAttemptAt.After(sb.now) {
		sb.DueAt = sb.NextAttemptAt // the backoff after a failed wake (retryAfter)
		return nil, nil
	}
	sb.DueAt, sb.NextAttemptAt = nil, nil
	if !anyPending(links) {
		return nil, nil
	}
	sb.Generation++
	sb.WakeID = newWakeID()
	if sb.Type == typeWebhook {
		sb.Phase = phaseDelivering
		sb.RetryCount, sb.NextAttemptAt = 0, nil
		return s.takeAttempt(ctx, tx, sb, links)
	}
	sb.Phase = phaseOpen
	return nil, s.announce(ctx, tx, sb, links)
}

// takeAttempt makes this process the one that POSTs the current webhook wake, until the
// attempt lapses (then any process may retry it). The attempt's window covers the wait
// for the delivery's slots (MaxDeliveryWait), its request (DeliveryTimeout) and a margin
// for recording the answer: the delivery does not start after its startBy, so the
// attempt does not lapse while this process may still POST it.
func (s *Service) takeAttempt(ctx context.Context, tx *streamdb.Tx, sb *sub, links []*link) (*delivery, error) {
	if links == nil {
		var err error
		if links, err = loadLinks(ctx, tx, sb.ID, true); err != nil {
			return nil, err
		}
	}
	listed := wakeLinks(links)
	snapshot(tx, sb.ID, listed)
	startBy := time.Now().Add(s.opts.MaxDeliveryWait)
	until := sb.now.Add(s.opts.MaxDeliveryWait + s.opts.DeliveryTimeout + 5*time.Second)
	sb.AttemptOwner, sb.AttemptUntil, sb.DueAt = s.procID, &until, &until
	primary := primaryStream(listed)
	token := s.keys.Load().mintToken(tokenClaims{Sub: sb.ID, Generation: sb.Generation, WakeID: sb.WakeID, Primary: primary})
	body := webhookBody{
		SubscriptionID: sb.ID,
		WakeID:         sb.WakeID,
		Generation:     sb.Generation,
		Streams:        infos(listed),
		CallbackURL:    s.actionURL(sb.BaseURL, sb.ID, "callback"),
		CallbackToken:  token,
	}
	job := &delivery{subID: sb.ID, wakeID: sb.WakeID, generation: sb.Generation, url: sb.WebhookURL, body: body,
		token: token, origin: s.origin(sb.BaseURL), startBy: startBy}
	if primary != "" {
		for _, l := range listed {
			if l.Path == primary {
				job.primary, job.primaryTail = primary, l.Tail.String()
			}
		}
		if s.opts.Enrich != nil {
			start, err := primaryStart(ctx, tx, listed, primary)
			if err != nil {
				return nil, err
			}
			job.primaryStart = start
		}
	}
	return job, nil
}

// announce appends the wake record of a pull-wake to its wake stream, in the transaction
// that starts the wake. A missing or closed wake stream does not stop the wake (workers
// can still claim it); it is logged.
func (s *Service) announce(ctx context.Context, tx *streamdb.Tx, sb *sub, links []*link) error {
	stream := ""
	for _, l := range links {
		if l.pending() {
			stream = l.Path
			break
		}
	}
	rec, err := json.Marshal(wakeRecord{Type: "wake", SubscriptionID: sb.ID, WakeID: sb.WakeID, Generation: sb.Generation,
		Stream: stream, TS: time.Now().UnixMilli()})
	if err != nil {
		return err
	}
	_, err = tx.Append(ctx, &streamdb.AppendRequest{Path: streamRoot + sb.WakeStream, Messages: [][]byte{rec}})
	var closed *streamdb.ClosedError
	if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) || errors.As(err, &closed) {
		s.log.Warn("wake stream cannot be appended to; the wake can still be claimed",
			zap.String("subscription", sb.ID), zap.String("wake_stream", sb.WakeStream), zap.Error(err))
		return nil
	}
	return err
}

// endWake clears the wake in flight.
func endWake(sb *sub) {
	sb.WakeID, sb.Phase, sb.Holder = "", "", ""
	sb.LeaseUntil, sb.AttemptUntil, sb.NextAttemptAt, sb.DueAt = nil, nil, nil, nil
	sb.AttemptOwner = ""
	sb.RetryCount = 0
}

// origin is the scheme and host a subscription was created through (its base without
// the /v1/stream alias), or the configured public URL.
func (s *Service) origin(base string) string {
	if s.opts.PublicURL != "" {
		return s.opts.PublicURL
	}
	return strings.TrimSuffix(base, strings.TrimSuffix(AliasControlPrefix, ControlPrefix))
}

// actionURL is the URL of a subscription's control action (callback, claim, ...).
func (s *Service) actionURL(base, id, action string) string {
	if s.opts.PublicURL != "" {
		base = s.opts.PublicURL
	}
	return base + ControlPrefix + "subscriptions/" + escapeSegment(id) + "/" + action
}

// escapeSegment escapes like JavaScript's encodeURIComponent (spaces as %20).
func escapeSegment(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// launch starts a webhook request.
func (s *Service) launch(job *delivery) {
	if job == nil {
		return
	}
	s.launchMu.Lock()
	running := s.running
	if running {
		s.deliverW.Add(1)
		go func() {
			defer s.deliverW.Done()
			s.deliver(job)
		}()
	}
	s.launchMu.Unlock()
	if !running {
		s.abandon(job) // stopping (or not started): another process, or the next start, retries
	}
}

// readSubs reads the subscriptions that an evaluation is about to look at, in one
// statement (nil for one that does not exist).
func (s *Service) readSubs(ctx context.Context, ids []string) ([]*sub, error) {
	rows, err := s.pool.Query(ctx, sqlSelectSubs, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := make(map[string]*sub, len(ids))
	for rows.Next() {
		sb, err := scanSub(rows, s.clock)
		if err != nil {
			return nil, err
		}
		byID[sb.ID] = sb
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return coalesce.InOrder(ids, byID), nil
}

// acceptedWake is a webhook's 2xx without done, for the statement that records those of
// many wakes (AcceptDeliveries).
type acceptedWake struct {
	sub, wakeID string
	generation  int64
}

func (s *Service) recordAccepted(ctx context.Context, wakes []acceptedWake) ([]struct{}, error) {
	subs, ids, gens := make([]string, len(wakes)), make([]string, len(wakes)), make([]int64, len(wakes))
	for i, w := range wakes {
		subs[i], ids[i], gens[i] = w.sub, w.wakeID, w.generation
	}
	_, err := s.pool.Exec(ctx, sqlAcceptDeliveries, subs, ids, gens, s.clock.SQL())
	return make([]struct{}, len(wakes)), err
}

type result struct {
	ok, done bool
	err      error
	// handlerFailed: the handler answered an error status or did not answer in time (a
	// failed attempt of its work, for the give-up rule); a target that cannot be reached
	// or is busy is retried without counting, as an outage
	handlerFailed bool
}

// deliver makes a webhook attempt: it enriches the wake, takes its slots (targets.go)
// and POSTs it. Enriching reads this server's database and holds no slot, so a slot of
// the target is held for its request alone; the enrichment and the wait for the slots
// both end by the delivery's startBy.
func (s *Service) deliver(job *delivery) {
	ctx := s.deliverCtx
	body, res, err := s.prepare(job)
	if err == nil && body != nil {
		if err = s.takeSlots(s.waitCtx, job); err == nil {
			res = s.post(ctx, job, body)
			s.releaseSlots(job)
		} else if s.waitCtx.Err() == nil {
			// its target is busy: a failed attempt, retried with backoff (targets.go)
			metrics.WebhookDeliveriesRefused.WithLabelValues(refusalReason(err)).Inc()
			res, err = result{err: err}, nil
		}
	}
	if err != nil || ctx.Err() != nil {
		s.abandon(job) // stopping: the wake is handed back, posted or not
		return
	}
	s.record(ctx, job, res)
}

// prepare encodes job's body (enrich), by its startBy. A nil body comes with the
// attempt's result (a wake not to be delivered, a failed enrichment); an error means the
// service is stopping.
func (s *Service) prepare(job *delivery) ([]byte, result, error) {
	ctx, cancel := context.WithDeadline(s.waitCtx, job.startBy)
	defer cancel()
	body, err := s.enrich(ctx, job)
	switch {
	case s.waitCtx.Err() != nil:
		return nil, result{}, s.waitCtx.Err()
	case errors.Is(err, ErrNotWanted):
		return nil, result{ok: true, done: true}, nil
	case err != nil:
		return nil, result{err: fmt.Errorf("enrich the wake: %w", err)}, nil
	}
	return body, result{}, nil
}

// record applies a delivery's outcome and launches the next wake it started.
func (s *Service) record(ctx context.Context, job *delivery, res result) {
	next, err := s.applyResult(ctx, job, res)
	if err != nil {
		s.logs.record.Log(s.log, zapcore.WarnLevel, "could not record a webhook delivery; it is retried when its attempt lapses",
			zap.String("subscription", job.subID), zap.String("wake_id", job.wakeID), zap.Error(err))
		return
	}
	s.launch(next)
}

// post makes one webhook request, within DeliveryTimeout.
func (s *Service) post(ctx context.Context, job *delivery, body []byte) result {
	ctx, cancel := context.WithTimeout(ctx, s.opts.DeliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.url, bytes.NewReader(body))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "entityd-subscriptions")
	req.Header.Set("Webhook-Signature", s.keys.Load().signature(body, time.Now()))
	resp, err := s.clients.For(req.URL).Do(req)
	if err != nil {
		return result{err: err, handlerFailed: errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return result{err: fmt.Errorf("webhook answered %d", resp.StatusCode), handlerFailed: true}
	}
	var answer struct {
		Done bool `json:"done"`
	}
	_ = json.Unmarshal(data, &answer) // any 2xx is an acceptance; only {"done":true} acks
	return result{ok: true, done: answer.Done}
}

// applyResult records the outcome of a webhook request, fenced by the wake it was for:
// a synchronous done acknowledges what the wake listed and starts the next one; another
// 2xx leaves the wake open for callbacks; a failure schedules a retry.
func (s *Service) applyResult(ctx context.Context, job *delivery, res result) (*delivery, error) {
	if res.ok && !res.done { // the common answer of an asynchronous handler: one statement, shared
		_, err := s.accepts.Do(ctx, acceptedWake{job.subID, job.wakeID, job.generation})
		return nil, err
	}
	if res.ok && res.done {
		// The answer of a handler that finished at once: the wake ends in the dones'
		// shared transaction (endWakes), which also starts and launches the next one.
		ans, err := s.dones.Do(ctx, doneRequest{sub: job.subID, wakeID: job.wakeID, generation: job.generation,
			primary: job.primary})
		if err != nil || !ans.alone {
			return nil, err
		}
	}
	var next *delivery
	var sb *sub
	err := s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		next = nil
		var err error
		if sb, err = lockSub(ctx, tx, job.subID, s.clock); err != nil || sb == nil {
			return err
		}
		if sb.WakeID != job.wakeID || sb.Generation != job.generation {
			return nil // the wake ended meanwhile (a callback's done, a deletion)
		}
		switch {
		case res.ok && res.done:
			sb.Status, sb.LastError = statusActive, ""
			ackSnapshot(tx, sb.ID)
			if err := s.wakeEnded(ctx, tx, job.primary); err != nil {
				return err
			}
			endWake(sb)
			if next, err = s.startWake(ctx, tx, sb, nil); err != nil {
				return err
			}
		case res.ok:
			sb.Status, sb.LastError, sb.RetryCount, sb.NextAttemptAt = statusActive, "", 0, nil
			if sb.Phase == phaseDelivering {
				lease := sb.now.Add(sb.leaseTTL())
				sb.Phase, sb.AttemptOwner, sb.AttemptUntil = phaseOpen, "", nil
				sb.LeaseUntil, sb.DueAt = &lease, &lease
			}
		default:
			if sb.Phase != phaseDelivering || (sb.AttemptOwner != "" && sb.AttemptOwner != s.procID) {
				return nil // a callback showed the receiver alive, or another process took over
			}
			sb.RetryCount++
			delay := s.backoff(sb.RetryCount)
			at := sb.now.Add(delay)
			// the receiver's words: bounded, and storable whatever bytes it sent
			msg := textpolicy.Sanitize(res.err.Error(), 500)
			if s.opts.OpaqueErrors {
				// the reason is logged below; shown, it would tell a refused port from a
				// closed one or a failing handler
				msg = "webhook delivery failed"
			}
			sb.Status, sb.LastError = statusFailed, msg
			sb.AttemptOwner, sb.AttemptUntil = "", nil
			sb.NextAttemptAt, sb.DueAt = &at, &at
			setAside := false
			if res.handlerFailed {
				if _, setAside, err = s.failedWake(ctx, tx, sb, nil, job.primary, msg); err != nil {
					return err
				}
			}
			if setAside { // the wake ends; later work makes the next one
				if err := s.wakeEnded(ctx, tx, job.primary); err != nil {
					return err
				}
				endWake(sb)
				if next, err = s.startWake(ctx, tx, sb, nil); err != nil {
					return err
				}
				saveSub(tx, sb)
				return nil
			}
			s.log.Warn("webhook delivery failed; retrying", zap.String("subscription", sb.ID),
				zap.String("wake_id", sb.WakeID), zap.Int("attempt", sb.RetryCount), zap.Duration("retry_in", delay),
				zap.Error(res.err))
		}
		saveSub(tx, sb)
		return nil
	})
	if err == nil && sb != nil && sb.endedWake() {
		s.enqueue(sb.ID)
	}
	return next, err
}

// backoff is the delay before retry n (1, 2, ...): RetryBase doubling up to RetryMax, ±20%.
func (s *Service) backoff(n int) time.Duration {
	d := float64(s.opts.RetryBase) * math.Pow(2, float64(max(n-1, 0)))
	d = math.Min(d, float64(s.opts.RetryMax))
	d *= 0.8 + 0.4*mrand.Float64()
	return time.Duration(d)
}

// abandon hands an unfinished attempt back (on shutdown) so that any process retries it.
func (s *Service) abandon(job *delivery) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.pool.Exec(ctx, sqlAbandonAttempt, job.subID, job.wakeID, s.procID, s.clock.SQL())
	if err != nil {
		s.logs.handBack.Log(s.log, zapcore.WarnLevel, "could not hand back a webhook attempt; it is retried when it lapses",
			zap.String("subscription", job.subID), zap.Error(err))
	}
}
