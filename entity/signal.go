package entity

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// Signals an entity accepts.
const (
	SIGINT  = "SIGINT"
	SIGHUP  = "SIGHUP"
	SIGTERM = "SIGTERM"
	SIGKILL = "SIGKILL"
	SIGSTOP = "SIGSTOP"
	SIGCONT = "SIGCONT"
	SIGUSR  = "SIGUSR"
)

// ValidSignal reports whether s is a signal name the API accepts.
func ValidSignal(s string) bool {
	switch s {
	case SIGINT, SIGHUP, SIGTERM, SIGKILL, SIGSTOP, SIGCONT, SIGUSR:
		return true
	}
	return false
}

// SignalRequest is a signal sent to an entity.
type SignalRequest struct {
	Signal  string
	Reason  *string
	Payload json.RawMessage
}

// SignalResult is the transition a signal caused.
type SignalResult struct {
	URL           string
	Signal        string
	PreviousState Status
	NewState      Status
	CreatedAt     time.Time
	Txid          int64
}

// Signal applies a signal: the status change, a signal event on the entity's stream, and
// for terminal states the closing of the stream, all in one transaction.
func (r *Registry) Signal(ctx context.Context, url string, req SignalRequest) (*SignalResult, error) {
	var out *SignalResult
	err := r.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		e, err := lockEntity(ctx, tx, url)
		if err != nil {
			return err
		}
		if e.Terminal() {
			return &InvalidSignalError{Status: e.Status}
		}
		txid, err := currentTxid(ctx, tx)
		if err != nil {
			return err
		}
		next, handled := e.Status.Next(req.Signal, r.handled != nil && r.handled(e.Type))
		now := time.Now()
		closing := next == StatusKilled || next == StatusStopped
		event := signalEvent(e, req, next, handled, now, strconv.FormatInt(txid, 10))
		if _, err := tx.Append(ctx, &streamdb.AppendRequest{Path: e.MainStream(), Messages: [][]byte{event}, Close: closing}); err != nil {
			return err
		}
		if closing { // the slash-command collection ends with the entity
			if _, err := tx.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Collection(url), Close: true}); err != nil {
				return err
			}
			if r.onEnd != nil {
				if err := r.onEnd(ctx, tx, url, string(next)); err != nil {
					return err
				}
			}
		}
		// The row is written even when the status stays (updated_at moves): the entities
		// shape then carries this transaction's txid, which the answer names and clients
		// await, as the reference touches the row for such signals.
		if _, err := tx.Exec(ctx, sqlSetStatus, url, string(next)); err != nil {
			return err
		}
		out = &SignalResult{URL: url, Signal: req.Signal, PreviousState: e.Status, NewState: next, CreatedAt: now, Txid: txid}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func signalEvent(e *Entity, req SignalRequest, next Status, handled bool, now time.Time, txid string) []byte {
	var v rawjson.Object
	v.String("signal", req.Signal).String("sender", "/_electric/server")
	if handled {
		v.String("status", "handled")
	} else {
		v.String("status", "unhandled")
	}
	outcome := "delivered"
	switch {
	case next == StatusKilled:
		outcome = "killed"
	case next == StatusStopped:
		outcome = "stopped"
	case next == StatusStopping:
		outcome = "stopping"
	case next == StatusPaused && e.Status != StatusPaused:
		outcome = "paused"
	case next == StatusIdle && e.Status == StatusPaused:
		outcome = "resumed"
	case !handled && e.Status == StatusPaused:
		outcome = "ignored"
	}
	v.String("outcome", outcome).String("previous_state", string(e.Status)).String("new_state", string(next))
	if req.Reason != nil {
		v.String("reason", *req.Reason)
	}
	if req.Payload != nil {
		v.Raw("payload", req.Payload)
	}
	v.Time("timestamp", now)
	key := "signal-" + req.Signal + "-" + now.UTC().Format("20060102T150405.000000000Z")
	return wire.Event{Type: "signal", Key: key, Value: v.Bytes(), Operation: wire.OpInsert, Txid: txid, Timestamp: now}.Marshal()
}
