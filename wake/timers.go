package wake

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// Schedule records timer id for an entity inside tx: at due, a schedule wake with
// payload is appended to the entity's stream.
func Schedule(ctx context.Context, tx *streamdb.Tx, id, entityURL string, due time.Time, payload json.RawMessage) error {
	var p any
	if payload != nil {
		p = []byte(payload)
	}
	_, err := tx.Exec(ctx, sqlSchedule, id, entityURL, due, p)
	return err
}

// PokeTimers makes the timer service look for due timers now (after a Schedule commits).
func (d *Dispatcher) PokeTimers() { poke(d.timerPoke) }

// timerPoll is the longest the timer service sleeps: timers scheduled by other
// processes fire at most this late.
const timerPoll = time.Second

// fireTimers fires due timers: it appends their wake events (deduplicated by timer id,
// so a timer fires once even if two processes race) and deletes them, in one transaction
// per batch. It returns when the next timer is due (the timer service sleeps until then,
// at most timerPoll).
func (d *Dispatcher) fireTimers(ctx context.Context) time.Time {
	began := d.clock.Now()
	next, err := d.fireDueTimers(ctx)
	if err != nil && ctx.Err() == nil {
		d.warn(&d.logs.timers, "firing timers failed", zap.Error(err))
	}
	if next == nil {
		return time.Time{}
	}
	// one another process is firing (locked, so skipped here) is not looked at again
	// at once
	return later(*next, began.Add(5*time.Millisecond))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (d *Dispatcher) fireDueTimers(ctx context.Context) (*time.Time, error) {
	clk := d.clock
	for {
		fired := 0
		err := d.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
			fired = 0
			rows, err := tx.Query(ctx, sqlDueTimers, d.clock.SQL())
			if err != nil {
				return err
			}
			type due struct {
				id, url string
				at      time.Time
				payload []byte
			}
			var list []due
			for rows.Next() {
				var d due
				if err := rows.Scan(&d.id, &d.url, &d.at, &d.payload); err != nil {
					rows.Close()
					return err
				}
				list = append(list, d)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, d := range list {
				now := clk.Now()
				var v rawjson.Object
				v.String("kind", "schedule").String("id", d.id)
				if d.payload != nil {
					v.Raw("payload", d.payload)
				}
				v.Time("due_at", d.at).Time("fired_at", now)
				ev := wire.Event{Type: "wake", Key: "timer-" + d.id, Value: v.Bytes(), Operation: wire.OpInsert,
					Timestamp: now}.Marshal()
				hash := sha256.Sum256([]byte(d.id))
				_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Main(d.url), Messages: [][]byte{ev},
					Dedupe: &streamdb.Dedupe{Key: "timer:" + d.id, Hash: hash[:], Ref: d.id}})
				var closed *streamdb.ClosedError
				if err != nil && !errors.As(err, &closed) && !errors.Is(err, streamdb.ErrNotFound) {
					return err
				}
				if _, err := tx.Exec(ctx, sqlDeleteTimer, d.id); err != nil {
					return err
				}
				fired++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if fired < 100 {
			break
		}
	}
	var next *time.Time
	err := d.pool.QueryRow(ctx, sqlNextTimerDue).Scan(&next)
	return next, err
}
