package acp

import (
	"context"
	"encoding/json"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/entityd/entityd/wire/editortool"
)

// The fallback status check: a run that writes nothing appends nothing to the stream, so
// no long-poll wakes for it; the wake status is then read at these intervals (doubling),
// and after every stream batch.
const (
	statusFirstCheck = 100 * time.Millisecond
	statusMaxCheck   = 2 * time.Second
)

// runOutcome is how the handler's run for a message ended.
type runOutcome int

const (
	runDone   runOutcome = iota // the run acknowledged the message
	runFailed                   // the run was given up on (or the entity ended first)
)

// replyFollower streams the entity's reply to one message to the editor: it follows the
// entity's main stream from the offset just after the message with long-polls, turns
// the reply's text into agent_message_chunks (one chunk per text_delta event — how a
// handler writes its reply, as Electric's runtime does — or per `text` event with a text
// member, as older handlers wrote it; sent as it arrives, so nothing is buffered), and
// stops when the handler's run for the message has ended.
//
// The run has ended when the wake status's scanned_seq reaches the message's sequence
// number (a run's writes commit together with that acknowledgement). The status is read
// after every stream batch and, for runs that write nothing, on a timer (statusFirstCheck
// doubling to statusMaxCheck). Once it says done, a last catch-up read from the position
// reached takes what the run wrote and the long-poll had not delivered yet. The run
// failed when an error event for the message says will_retry false, the message's inbox
// row is updated to status "failed", or the status lists it among its failures.
//
// Editor tool calls of the session (editor_tool_call events, editortools.go) that the
// reply's runs write are run as they are seen, and the turn goes on: it ends only once
// every such call's result was delivered and the run for the last result has ended (the
// target seq moves to that message), and a last read finds no new call.
//
// Text is not matched to the message's run (a Go handler's run is run-<the message's
// seq>, but a handler written with Electric's runtime numbers its runs itself): while
// prompts from several sessions (or other senders) overlap on one entity, a reply can
// include text of the run of a neighbouring message.
type replyFollower struct {
	api     *entityAPI
	log     *zap.Logger
	emit    func(ctx context.Context, text string) // one agent_message_chunk
	key     string                                 // the inbox message key
	seq     int64                                  // its sequence number in the main stream
	offset  string                                 // where reading continues
	failed  bool
	failure string // why, when the run's error event says (its message)
	chunks  int
	closed  bool // the stream closed (the entity ended)

	tools   *editorTools    // the session's editor tools (nil: calls are not looked for)
	keys    map[string]bool // the messages whose runs are the turn's: the prompt, then each result
	pending []*toolCall     // calls seen in the turn whose results are not delivered yet
	seen    map[string]bool // ids of the calls seen in the turn
}

// longPollResult is what the long-poll goroutine hands to follow.
type longPollResult struct {
	b   *batch
	err error
}

// follow runs until the turn's runs end (the outcome) or ctx ends (ctx's error).
func (r *replyFollower) follow(ctx context.Context) (runOutcome, error) {
	r.keys, r.seen = map[string]bool{r.key: true}, map[string]bool{}
	r.tools.turnSent(r.seq)
	for {
		outcome, more, err := r.followLive(ctx)
		if err != nil || !more {
			return outcome, err
		}
	}
}

// followLive follows the stream live from r.offset until the runs end (more: the last
// read found calls to wait for; follow again) or ctx ends.
func (r *replyFollower) followLive(ctx context.Context) (runOutcome, bool, error) {
	lpCtx, stopLP := context.WithCancel(ctx)
	results := make(chan longPollResult)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.longPoll(lpCtx, r.offset, results)
	}()
	stop := func() {
		stopLP()
		<-done
	}
	defer stop()

	interval := statusFirstCheck
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case res := <-results:
			if res.err != nil {
				return 0, false, res.err
			}
			r.handle(ctx, res.b.events)
			r.offset = res.b.next
			if ended, err := r.ended(ctx); err != nil || ended {
				stop()
				return r.finish(ctx, err)
			}
			if res.b.closed {
				// The entity ended (stopped or killed) before its run for the message.
				stop()
				r.failed, r.closed = true, true
				return r.finish(ctx, nil)
			}
			interval = statusFirstCheck
			resetTimer(timer, interval)
		case <-r.nextCall():
			r.collect()
			if ended, err := r.ended(ctx); err != nil || ended {
				stop()
				return r.finish(ctx, err)
			}
			interval = statusFirstCheck
			resetTimer(timer, interval)
		case <-timer.C:
			if ended, err := r.ended(ctx); err != nil || ended {
				stop()
				return r.finish(ctx, err)
			}
			interval = min(2*interval, statusMaxCheck)
			timer.Reset(interval)
		}
	}
}

// nextCall is closed once the first pending call is done (nil: none pending).
func (r *replyFollower) nextCall() <-chan struct{} {
	if len(r.pending) == 0 {
		return nil
	}
	return r.pending[0].done
}

// collect takes the calls that are done: the turn now waits for the runs of their
// results.
func (r *replyFollower) collect() {
	kept := r.pending[:0]
	for _, c := range r.pending {
		select {
		case <-c.done:
			if c.seq > 0 {
				r.seq = max(r.seq, c.seq)
				r.keys[c.resultKey()] = true
			}
		default:
			kept = append(kept, c)
		}
	}
	r.pending = kept
}

// abandonCalls cancels the turn's calls in flight (the turn was cancelled) and waits a
// little for their last updates and results ("cancelled") to go out.
func (r *replyFollower) abandonCalls() {
	if len(r.pending) == 0 {
		return
	}
	for _, c := range r.pending {
		c.abort("the editor cancelled the prompt")
	}
	bound := time.NewTimer(closeTimeout)
	defer bound.Stop()
	for _, c := range r.pending {
		select {
		case <-c.done:
		case <-bound.C:
			return
		}
	}
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(d)
}

// finish reads what the stream holds after the position reached (the run's writes the
// long-poll had not delivered) and reports the outcome; more when that read found
// calls of the turn to wait for.
func (r *replyFollower) finish(ctx context.Context, statusErr error) (runOutcome, bool, error) {
	if statusErr != nil {
		return 0, false, statusErr
	}
	for range 64 { // the run's writes are a few chunks at most; bound the loop anyway
		b, err := r.api.readStream(ctx, "/main", r.offset, "", false)
		if err != nil {
			return 0, false, err
		}
		r.handle(ctx, b.events)
		progressed := b.next != r.offset
		r.offset = b.next
		if len(b.events) == 0 || !progressed {
			break
		}
	}
	if len(r.pending) > 0 && !r.closed {
		return 0, true, nil
	}
	if r.failed {
		return runFailed, false, nil
	}
	return runDone, false, nil
}

// failureNotice is what the editor is told when the run for the message failed: a turn
// that ends normally (end_turn) with this text, rather than ACP's "refusal", which says
// the agent declined and makes editors rewind the turn.
func (r *replyFollower) failureNotice() string {
	notice := couldNotHandle(r.failure)
	if r.chunks > 0 {
		notice = "\n\n" + notice
	}
	return notice
}

// couldNotHandle is the notice of a message whose run failed, why being the handler's
// error ("" when the adapter does not know it).
func couldNotHandle(why string) string {
	if why == "" {
		why = "the entity stopped or its handler gave up on the message"
	}
	return "entityd: the entity could not handle this message (" + why + ")."
}

// gaveUp reads an error event that says the run for the message at key was given up on
// (will_retry false), with the handler's error message.
func gaveUp(e event) (key, why string, ok bool) {
	var v struct {
		Key       string `json:"key"`
		WillRetry *bool  `json:"will_retry"`
		Message   string `json:"message"`
	}
	if e.Type != "error" || json.Unmarshal(e.Value, &v) != nil || v.WillRetry == nil || *v.WillRetry {
		return "", "", false
	}
	return v.Key, v.Message, true
}

// ended reads the wake status: has the run for the message (or the last result the turn
// waits for) ended? Never while calls of the turn are pending.
func (r *replyFollower) ended(ctx context.Context) (bool, error) {
	if len(r.pending) > 0 {
		return false, nil
	}
	st, err := r.api.wake(ctx)
	if err != nil {
		if ctx.Err() != nil || !retryable(err) {
			return false, err
		}
		// A transient failure: the next batch or timer tick asks again.
		r.log.Warn("reading the entity's wake status", zap.Error(err))
		return false, nil
	}
	for _, f := range st.Failures {
		if f.Seq == r.seq || r.keys[f.Key] {
			r.failed = true
		}
	}
	return st.ScannedSeq >= r.seq, nil
}

// handle forwards text and notes failures of the message's run.
func (r *replyFollower) handle(ctx context.Context, events []event) {
	for _, e := range events {
		switch e.Type {
		case "text", "text_delta":
			if text := replyText(e); text != "" {
				r.emit(ctx, text)
				r.chunks++
			}
		case "error":
			if key, why, ok := gaveUp(e); ok && r.keys[key] {
				r.failed, r.failure = true, why
			}
		case editortool.CallEventType:
			if r.tools == nil || !isCall(e) {
				continue
			}
			if c := r.tools.dispatch(e.Key, e.Value); c != nil && !r.seen[c.id] {
				r.seen[c.id] = true
				r.pending = append(r.pending, c)
			}
		case "inbox":
			if !r.keys[e.Key] || e.Headers.Operation != "update" {
				continue
			}
			var v struct {
				Status string `json:"status"`
			}
			if json.Unmarshal(e.Value, &v) == nil && v.Status == "failed" {
				r.failed = true
			}
		}
	}
}

// replyText is the reply text a text or text_delta event carries ("" for none): a
// text_delta's delta, or a text event's text member (as older handlers wrote a reply).
// Only inserts and upserts count: an update restates a row (its status, say) and would
// repeat the text. A live reply and a replayed history read events through it alike.
func replyText(e event) string {
	if e.Type != "text" && e.Type != "text_delta" {
		return ""
	}
	if e.Headers.Operation != "" && e.Headers.Operation != "insert" && e.Headers.Operation != "upsert" {
		return ""
	}
	var v struct {
		Text  *string `json:"text"`
		Delta *string `json:"delta"`
	}
	if json.Unmarshal(e.Value, &v) != nil {
		return ""
	}
	text := v.Text
	if e.Type == "text_delta" && v.Delta != nil {
		text = v.Delta
	}
	if text == nil {
		return ""
	}
	return *text
}

// longPoll reads the main stream live from offset and hands every batch with events (or
// a closed stream) to results; transient errors are retried with backoff, others are
// handed over and end it.
func (r *replyFollower) longPoll(ctx context.Context, offset string, results chan<- longPollResult) {
	var cursor string
	b := newBackoff()
	for ctx.Err() == nil {
		res, err := r.api.readStream(ctx, "/main", offset, cursor, true)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if retryable(err) {
				r.log.Warn("following the entity's reply", zap.Error(err), zap.Duration("retry_in", b.peek()))
				if !b.wait(ctx) {
					return
				}
				continue
			}
			select {
			case results <- longPollResult{err: err}:
			case <-ctx.Done():
			}
			return
		}
		b.reset()
		offset, cursor = res.next, res.cursor
		if len(res.events) == 0 && !res.closed {
			continue // 204: the long-poll timed out with nothing new
		}
		select {
		case results <- longPollResult{b: res}:
		case <-ctx.Done():
			return
		}
		if res.closed {
			return
		}
	}
}

// agentChunk is the session/update of one reply chunk.
func agentChunk(session sdk.SessionId, text string) sdk.SessionNotification {
	return sdk.SessionNotification{SessionId: session, Update: sdk.UpdateAgentMessageText(text)}
}
