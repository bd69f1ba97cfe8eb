package runtime

import (
	"strconv"
	"strings"
	"time"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/wire"
)

// A handler's reply is written the way Electric's runtime writes an agent's reply, since
// that is what Electric's web UI renders (one reply bubble per run, its text joined from
// the text_delta rows of the run's texts) and what runFinished wake registrations wait
// for (the run's update to completed or failed). One wake is one run: the first reply
// write opens it, and it ends when the handler returns nil. For a wake whose handler
// writes `a` then `b`, the stream gets:
//
//	run         insert run-<seq>             {status: started}
//	text        insert run-<seq>:msg         {status: streaming, run_id}
//	text_delta  insert run-<seq>:msg:0       {text_id: run-<seq>:msg, run_id, delta: a}
//	text        update run-<seq>:msg         {status: completed, run_id}
//	text        insert run-<seq>:msg-1       {status: streaming, run_id}
//	text_delta  insert run-<seq>:msg-1:0     {text_id: run-<seq>:msg-1, run_id, delta: b}
//	text        update run-<seq>:msg-1       {status: completed, run_id}
//	…the handler's other writes…
//	run         update run-<seq>             {status: completed, finish_reason: stop}
//
// <seq> is the stream position of the event that woke the handler (wire.RunKey). The
// first text of a run has the key of Electric's ctx.replyText. A wake that writes no
// reply and opens no run (StartRun) writes no run either, as in Electric, where a
// handler that neither runs its agent nor replies leaves no run.

// replyRun is the run of one wake, once a reply write opened it.
type replyRun struct {
	key    string
	texts  int  // texts written in it so far
	failed bool // FailRun was called: the run ends failed
}

// StartRun opens this wake's run, if a reply has not opened it already, and returns its
// key. A handler that writes no text but whose finishing others wait for (a parent that
// spawned it with wake on runFinished) calls it; the run ends when the handler returns
// nil (completed, or failed after FailRun). A handler that returns an error writes
// nothing; when the wake is given up on, the server records the run as failed.
func (c *Context) StartRun() string {
	if c.run == nil {
		c.run = &replyRun{key: c.runKey()}
		c.eff.own(wire.RunEvent(c.run.key, wire.OpInsert, "started", "", time.Now()))
	}
	return c.run.key
}

// WriteText appends one text of the wake's reply (opening the run if needed): a text row
// with its content as one text_delta, completed at once. Several calls add texts to the
// same reply, in order. An empty text writes nothing.
func (c *Context) WriteText(text string) error {
	if text == "" {
		return nil
	}
	run := c.StartRun()
	key := run + ":msg"
	if c.run.texts > 0 {
		key += "-" + strconv.Itoa(c.run.texts)
	}
	c.run.texts++
	now := time.Now()
	var streaming, delta, completed rawjson.Object
	streaming.String("status", "streaming").String("run_id", run)
	delta.String("text_id", key).String("run_id", run).String("delta", text)
	completed.String("status", "completed").String("run_id", run)
	c.eff.own(wire.Event{Type: "text", Key: key, Value: streaming.Bytes(), Operation: wire.OpInsert, Timestamp: now}.Marshal())
	c.eff.own(wire.Event{Type: "text_delta", Key: key + ":0", Value: delta.Bytes(), Operation: wire.OpInsert,
		Timestamp: now}.Marshal())
	c.eff.own(wire.Event{Type: "text", Key: key, Value: completed.Bytes(), Operation: wire.OpUpdate, Timestamp: now}.Marshal())
	return nil
}

// FailRun ends this wake's run as failed (opening it if needed) with message as its
// error, while the wake itself succeeds: what the handler wrote is kept and the message
// is not retried. Electric's UI shows the message as the reply's error, and a
// runFinished wake on this entity fires with run_status failed. Use it for a failure
// that retrying cannot fix; return an error for one it might.
func (c *Context) FailRun(message string) {
	run := c.StartRun()
	if c.run.failed {
		return
	}
	c.run.failed = true
	now := time.Now()
	var v rawjson.Object
	v.String("error_code", "handler_error").String("message", message).String("run_id", run)
	c.eff.own(wire.Event{Type: "error", Key: run + ":error", Value: v.Bytes(), Operation: wire.OpInsert,
		Timestamp: now}.Marshal())
}

// endRun closes the wake's run after the handler returned nil.
func (c *Context) endRun() {
	if c.run == nil {
		return
	}
	status, reason := "completed", "stop"
	if c.run.failed {
		status, reason = "failed", "error"
	}
	c.eff.own(wire.RunEvent(c.run.key, wire.OpUpdate, status, reason, time.Now()))
}

// runKey names this wake's run: by the wake's stream position, else (a context made
// without one) after the highest run-<n> in the entity's state.
func (c *Context) runKey() string {
	if c.seq > 0 {
		return wire.RunKey(c.seq)
	}
	next := int64(0)
	for _, k := range c.State().Keys("run") {
		n, err := strconv.ParseInt(strings.TrimPrefix(k, "run-"), 10, 64)
		if err == nil && strings.HasPrefix(k, "run-") && n >= next {
			next = n + 1
		}
	}
	return wire.RunKey(next)
}
