package entity

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// TagEventType is the event type of tag changes on an entity's stream (StreamDB's
// tags collection).
const TagEventType = "tags"

// ErrTooManyTags is a tag beyond the registry's tag limit.
var ErrTooManyTags = errors.New("entity: too many tags")

// TagResult is the entity after a tag change and the transaction that made it.
type TagResult struct {
	Entity *Entity
	Txid   int64
}

// SetTag sets tag key to value. A change updates the entity's tags and appends a tags
// event ({key, value}; insert for a new key, update for a new value) in one transaction
// (the reference mirrors tags to the stream later, through an outbox); setting the value
// a tag already has writes nothing. ErrNotFound, ErrNotRunning.
func (r *Registry) SetTag(ctx context.Context, url, key, value string) (*TagResult, error) {
	return r.changeTag(ctx, url, key, func(tags map[string]string) (string, []byte) {
		old, had := tags[key]
		if had && old == value {
			return "", nil
		}
		tags[key] = value
		var v rawjson.Object
		v.String("key", key).String("value", value)
		if had {
			return wire.OpUpdate, v.Bytes()
		}
		return wire.OpInsert, v.Bytes()
	})
}

// DeleteTag removes tag key (a tags delete event); removing an absent tag writes nothing.
func (r *Registry) DeleteTag(ctx context.Context, url, key string) (*TagResult, error) {
	return r.changeTag(ctx, url, key, func(tags map[string]string) (string, []byte) {
		if _, had := tags[key]; !had {
			return "", nil
		}
		delete(tags, key)
		return wire.OpDelete, nil
	})
}

// changeTag runs change on the locked entity's tags; change returns the event's
// operation and value, or "" for no change.
func (r *Registry) changeTag(ctx context.Context, url, key string, change func(map[string]string) (string, []byte)) (*TagResult, error) {
	var out TagResult
	err := r.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		e, err := lockEntity(ctx, tx, url)
		if err != nil {
			return err
		}
		if !e.Status.AcceptsWrites() {
			return ErrNotRunning
		}
		if out.Txid, err = currentTxid(ctx, tx); err != nil {
			return err
		}
		tags := make(map[string]string, len(e.Tags)+1)
		for k, v := range e.Tags {
			tags[k] = v
		}
		op, value := change(tags)
		if r.maxTags > 0 && len(tags) > r.maxTags && len(tags) > len(e.Tags) {
			return ErrTooManyTags
		}
		if op != "" {
			now := time.Now()
			ev := wire.Event{Type: TagEventType, Key: key, Value: value, Operation: op, Timestamp: now}.Marshal()
			var closed *streamdb.ClosedError
			if _, err := tx.Append(ctx, &streamdb.AppendRequest{Path: e.MainStream(), Messages: [][]byte{ev}}); errors.As(err, &closed) {
				return ErrNotRunning
			} else if err != nil {
				return err
			}
			encoded, err := json.Marshal(tags)
			if err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, sqlSetTags,
				url, encoded).Scan(&e.UpdatedAt); err != nil {
				return err
			}
			e.Tags = tags
		}
		out.Entity = e
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.known.put(out.Entity)
	return &out, nil
}
