package streamdb

import (
	"errors"
	"fmt"
)

// Sentinel errors callers test with errors.Is; the HTTP layer maps each to a status.
var (
	ErrNotFound          = errors.New("stream not found")
	ErrGone              = errors.New("stream was deleted and is kept only for its forks")
	ErrExists            = errors.New("a stream with a different configuration exists at this path")
	ErrContentType       = errors.New("content type does not match the stream")
	ErrStreamSeq         = errors.New("Stream-Seq must be greater than the previous one")
	ErrEmptyAppend       = errors.New("an append needs at least one message")
	ErrForkSourceMissing = errors.New("fork source stream not found")
	ErrForkSourceGone    = errors.New("fork source stream was deleted")
	ErrForkOffset        = errors.New("fork offset is beyond the source stream")
	ErrForkSubOffset     = errors.New("fork sub-offset is beyond the message at the fork offset")
	ErrDedupeConflict    = errors.New("the key was already used for a different request")
	ErrOffsetBeyondTail  = errors.New("offset is beyond the tail of the stream")
	ErrTooLarge          = errors.New("append is too large")
)

// ClosedError reports an append to a closed stream. Tail is the final offset, which the
// protocol returns with the refusal.
type ClosedError struct{ Tail Offset }

func (e *ClosedError) Error() string { return "stream is closed" }

// StaleEpochError fences a zombie producer: its epoch is older than the stored one.
type StaleEpochError struct{ Current int64 }

func (e *StaleEpochError) Error() string {
	return fmt.Sprintf("producer epoch is stale (current epoch %d)", e.Current)
}

// SeqGapError reports a producer sequence that skips ahead of the next expected one.
type SeqGapError struct{ Expected, Received int64 }

func (e *SeqGapError) Error() string {
	return fmt.Sprintf("producer sequence gap: expected %d, received %d", e.Expected, e.Received)
}

// ErrEpochSeq reports a new producer epoch that does not start at sequence 0.
var ErrEpochSeq = errors.New("a new producer epoch must start at Producer-Seq 0")

// RefusedError is an append refused by an Admission check.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }
