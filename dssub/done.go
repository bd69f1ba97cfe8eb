package dssub

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/streamdb"
)

// Ending wakes together. Every wake of a webhook handler ends with a done: a callback,
// or the webhook's own answer {"done":true}. Each was a transaction of its own (lock,
// links, acks, snapshot, state, commit). A done is instead queued, and one transaction
// ends the wakes of every done queued while the previous one ran: one lock statement
// and one links read for all of them, their writes sent with the commit. A done that
// is refused (stale, invalid acks) refuses only itself: none of its writes is sent
// (links of a re-created stream are rebased all the same, as any transaction that
// locks the subscription would).
//
// A batch waits for no other transaction, so that one busy subscription cannot hold up
// the others: a subscription another transaction holds is skipped (SKIP LOCKED), and a
// pull-wake subscription, whose next wake would be appended to its wake stream (a lock
// shared with every other wake of that stream), is left too. Their dones are answered
// "alone" and take a transaction of their own, as before batches.

// doneRequest ends wake wakeID of subscription sub: a done callback whose token this
// server minted for the wake (req), or a webhook's synchronous {"done":true} (req nil),
// which acknowledges what the wake listed, at the generation it was delivered for.
type doneRequest struct {
	sub, wakeID string
	generation  int64
	token       string
	req         *ackRequest
	primary     string // the wake's primary stream (relative), for WakeEnded
}

// doneAnswer is what Callback answers a done request; alone: the batch did not take it
// (its subscription was held, deleted, or is a pull-wake), the done needs a transaction
// of its own.
type doneAnswer struct {
	nextWake, ended, alone bool
	err                    error // the request's own refusal
}

// endWakes ends the wakes of many dones in one transaction (the dones coalescer's
// statement).
func (s *Service) endWakes(ctx context.Context, reqs []doneRequest) ([]doneAnswer, error) {
	type after struct {
		sb  *sub
		job *delivery
	}
	var out []doneAnswer
	var afters []after
	err := s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		out, afters = make([]doneAnswer, len(reqs)), afters[:0]
		ids := make([]string, 0, len(reqs))
		for _, r := range reqs {
			ids = append(ids, r.sub)
		}
		subs, links, err := lockManyWithLinks(ctx, tx, ids, s.clock)
		if err != nil {
			return err
		}
		for _, i := range stepOrder(len(reqs), func(i int) string { return reqs[i].sub }, subs) {
			r := reqs[i]
			sb := subs[r.sub]
			if sb == nil || sb.Type == typePullWake {
				out[i].alone = true // held by another transaction, deleted, or a pull-wake
				continue
			}
			l := links[r.sub]
			if r.req == nil { // a webhook's synchronous done
				if sb.WakeID != r.wakeID || sb.Generation != r.generation {
					continue // the wake ended meanwhile (a callback's done, a deletion)
				}
				sb.Status, sb.LastError = statusActive, ""
				ackListed(tx, sb, l)
			} else {
				if sb.WakeID != r.wakeID {
					out[i].ended = true // a late done (or a second one): the wake ended already
					continue
				}
				if err := s.fence(r.token, sb, r.req); err != nil {
					out[i].err = err
					continue
				}
				if err := applyAcks(ctx, tx, sb, l, r.req); err != nil {
					out[i].err = err // refused before any of its writes was queued
					continue
				}
			}
			var retryAt time.Time
			if r.req != nil && r.primary != "" { // a done is about its own wake's primary stream only
				if retryAt, _, err = s.failedWake(ctx, tx, sb, l, r.primary, "the handler's done left its work unacknowledged"); err != nil {
					return err
				}
			}
			if err := s.wakeEnded(ctx, tx, r.primary); err != nil {
				return err
			}
			endWake(sb)
			retryAfter(sb, retryAt)
			job, err := s.startWake(ctx, tx, sb, l)
			if err != nil {
				return err
			}
			saveSub(tx, sb)
			out[i].nextWake = sb.WakeID != ""
			afters = append(afters, after{sb, job})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, a := range afters {
		s.committed(a.sb, a.job)
	}
	return out, nil
}

// wakeEnded runs Options.WakeEnded for the end of a wake whose primary stream is primary
// (relative; nothing for a wake that listed none).
func (s *Service) wakeEnded(ctx context.Context, tx *streamdb.Tx, primary string) error {
	if s.opts.WakeEnded == nil || primary == "" {
		return nil
	}
	return s.opts.WakeEnded(ctx, tx, streamRoot+primary)
}

// lockManyWithLinks locks the subscriptions ids name that no other transaction holds
// (LockSubs) and reads their links after the locks are taken, in one round trip; stale
// links are rebased as loadLinks does. A subscription that is held, or does not exist,
// is absent from the maps; one without links has an empty, non-nil slice.
func lockManyWithLinks(ctx context.Context, tx *streamdb.Tx, ids []string, clk clock.Clock) (map[string]*sub, map[string][]*link, error) {
	b := &pgx.Batch{}
	b.Queue(sqlLockSubs, ids)
	b.Queue(sqlSelectLinksOf, ids, streamRoot)
	br := tx.Pipeline(ctx, b)
	subs := make(map[string]*sub, len(ids))
	links := make(map[string][]*link, len(ids))
	var stale []string
	err := func() error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			sb, err := scanSub(rows, clk)
			if err != nil {
				rows.Close()
				return err
			}
			subs[sb.ID] = sb
			links[sb.ID] = []*link{}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if rows, err = br.Query(); err != nil {
			return err
		}
		defer rows.Close()
		staleOf := map[string]bool{}
		for rows.Next() {
			var id string
			var listedSeq, listedPos *int64
			l, isStale, err := scanLink(rows, []any{&id}, &listedSeq, &listedPos)
			if err != nil {
				return err
			}
			if listedSeq != nil && listedPos != nil && !isStale { // a rebase clears the snapshot
				l.Listed = &cursor{*listedSeq, *listedPos}
			}
			if _, ok := links[id]; !ok {
				continue // its subscription was deleted between the two statements
			}
			links[id] = append(links[id], l)
			if isStale && !staleOf[id] {
				staleOf[id] = true
				stale = append(stale, id)
			}
		}
		return rows.Err()
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("dssub: lock subscriptions: %w", err)
	}
	for _, id := range stale {
		if err := rebaseLinks(ctx, tx, id); err != nil {
			return nil, nil, err
		}
	}
	return subs, links, nil
}

// stepOrder is the order in which a batch steps its n items (idOf gives an item's
// subscription): those of subscriptions it locked in id order, the order of their
// locks, then the others in their own order.
func stepOrder(n int, idOf func(int) string, subs map[string]*sub) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		sa, sb := subs[idOf(order[a])], subs[idOf(order[b])]
		if sa == nil || sb == nil {
			return sa != nil && sb == nil
		}
		return sa.ID < sb.ID
	})
	return order
}

// ackListed acknowledges what the current wake listed (a synchronous done), as
// ackSnapshot does in SQL: cursors only move forward.
func ackListed(tx *streamdb.Tx, sb *sub, links []*link) {
	for _, l := range links {
		if l.Listed != nil && l.Acked.less(*l.Listed) {
			setAcked(tx, sb.ID, l, *l.Listed)
			l.Acked = *l.Listed
		}
	}
}
