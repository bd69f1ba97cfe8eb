package wake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// Observe records that observer wants to be woken by source's changes: events of the
// given types (all types when empty) written by source's handler, and source's end.
func Observe(ctx context.Context, tx *streamdb.Tx, observer, source string, eventTypes []string) error {
	if eventTypes == nil {
		eventTypes = []string{}
	}
	_, err := tx.Exec(ctx, sqlObserve, observer, source, eventTypes)
	return err
}

// Unobserve removes an observation.
func Unobserve(ctx context.Context, tx *streamdb.Tx, observer, source string) error {
	_, err := tx.Exec(ctx, sqlUnobserve, observer, source)
	return err
}

type observation struct {
	observer string
	types    map[string]bool
}

func observersOf(ctx context.Context, tx *streamdb.Tx, source string) ([]observation, error) {
	rows, err := tx.Query(ctx, sqlObserversOf, source)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []observation
	for rows.Next() {
		var o observation
		var types []string
		if err := rows.Scan(&o.observer, &types); err != nil {
			return nil, err
		}
		if len(types) > 0 {
			o.types = map[string]bool{}
			for _, t := range types {
				o.types[t] = true
			}
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// notifyObservers wakes the observers of source for the events its handler just wrote,
// in the same transaction (so an observer is woken exactly when the events commit).
func notifyObservers(ctx context.Context, tx *streamdb.Tx, source string, events [][]byte) error {
	obs, err := observersOf(ctx, tx, source)
	if err != nil || len(obs) == 0 {
		return err
	}
	for _, o := range obs {
		var wakes [][]byte
		for _, raw := range events {
			var ev wire.StreamEvent
			if json.Unmarshal(raw, &ev) != nil || ev.Type == "" || (o.types != nil && !o.types[ev.Type]) {
				continue
			}
			observed := wire.ObservedEvent{Type: ev.Type, Key: ev.Key, Operation: ev.Headers.Operation, Value: ev.Value}
			wakes = append(wakes, observationEvent(source, &observed, ""))
		}
		if err := appendWakes(ctx, tx, o.observer, source, wakes); err != nil {
			return err
		}
	}
	return nil
}

// NotifyEnd wakes the observers of an entity that stopped or was killed, and drops the
// observations it made itself. It runs inside the transaction that ends the entity.
func NotifyEnd(ctx context.Context, tx *streamdb.Tx, url, lifecycle string) error {
	obs, err := observersOf(ctx, tx, url)
	if err != nil {
		return err
	}
	for _, o := range obs {
		if err := appendWakes(ctx, tx, o.observer, url, [][]byte{observationEvent(url, nil, lifecycle)}); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, sqlDeleteObservationsOf, url)
	return err
}

// appendWakes appends observation wakes to an observer; an observer that has ended no
// longer observes anything.
func appendWakes(ctx context.Context, tx *streamdb.Tx, observer, source string, wakes [][]byte) error {
	if len(wakes) == 0 {
		return nil
	}
	_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Main(observer), Messages: wakes})
	var closed *streamdb.ClosedError
	if errors.As(err, &closed) || errors.Is(err, streamdb.ErrNotFound) {
		return Unobserve(ctx, tx, observer, source)
	}
	if err != nil {
		return fmt.Errorf("wake: notify observer %s: %w", observer, err)
	}
	return nil
}

func observationEvent(source string, ev *wire.ObservedEvent, lifecycle string) []byte {
	now := time.Now()
	var v rawjson.Object
	v.String("kind", "observation").String("source", source)
	if ev != nil {
		b, _ := json.Marshal(ev)
		v.Raw("event", b)
	}
	if lifecycle != "" {
		v.String("lifecycle", lifecycle)
	}
	v.Time("timestamp", now)
	return wire.Event{Type: "wake", Key: "observation-" + uuid.NewString(), Value: v.Bytes(),
		Operation: wire.OpInsert, Timestamp: now}.Marshal()
}
