package streamdb

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// maxNotifyPayload stays under Postgres's 8000-byte NOTIFY payload limit.
const maxNotifyPayload = 7900

// queueNotify adds the transaction's single NOTIFY: "<proc>|<id>:<seq>:<pos>:<flags>,...".
// NOTIFY takes a database-wide lock at commit, so a transaction sends at most one, and
// group commit makes that one cover many appends. Too many streams for one payload
// degrade to "<proc>|*", which makes every listener re-check its readers.
func (s *Store) queueNotify(ctx context.Context, b *pgx.Batch, w *writeSet) {
	notify := dbsqlc.NotifyParams{Channel: s.opts.NotifyChannel, Payload: s.notifyPayload(w)}
	queue(b, func(db dbsqlc.DBTX) error { return queries.Notify(ctx, db, notify) })
}

// Streams a transaction deleted (gone) follow as "<id>:0:0:g", so that other processes
// end the waits parked on them.
func (s *Store) notifyPayload(w *writeSet, gone ...int64) string {
	var sb strings.Builder
	sb.WriteString(s.procID)
	sb.WriteByte('|')
	for i, id := range w.order {
		m := w.touched[id]
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatInt(m.ID, 10))
		sb.WriteByte(':')
		sb.WriteString(strconv.FormatInt(m.Tail.Seq, 10))
		sb.WriteByte(':')
		sb.WriteString(strconv.FormatInt(m.Tail.Pos, 10))
		sb.WriteByte(':')
		if m.Closed {
			sb.WriteByte('c')
		}
		if sb.Len() > maxNotifyPayload {
			return s.procID + "|*"
		}
	}
	for _, id := range gone {
		if sb.Len() > len(s.procID)+1 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatInt(id, 10))
		sb.WriteString(":0:0:g")
		if sb.Len() > maxNotifyPayload {
			return s.procID + "|*"
		}
	}
	return sb.String()
}

// publish wakes this process's readers of every stream w changed.
func (s *Store) publish(w *writeSet) {
	if w == nil || len(w.order) == 0 {
		return
	}
	changes := make([]Change, 0, len(w.order))
	for _, id := range w.order {
		m := w.touched[id]
		s.notifier.publish(id, tailState{tail: m.Tail, closed: m.Closed, known: true, recent: w.written[id]})
		changes = append(changes, Change{StreamID: id, Tail: m.Tail, Closed: m.Closed, Local: true, Path: m.Path})
	}
	s.tellObservers(changes)
}

// publishGone wakes readers of a deleted stream.
func (s *Store) publishGone(id int64) {
	s.idents.dropID(id)
	s.notifier.publish(id, tailState{gone: true, known: true})
}

// listen keeps a dedicated connection LISTENing for other processes' commits. When the
// connection drops, notifications may have been missed, so every parked reader is woken
// to re-check against the database before the loop reconnects.
func (s *Store) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		s.notifier.publishAll()
		s.tellObservers(nil)
		s.log.Warn("notification listener disconnected; reconnecting", zap.Error(err), zap.Duration("backoff", backoff))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
	}
}

func (s *Store) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.opts.NotifyChannel}.Sanitize()); err != nil {
		return err
	}
	if err := s.registerListener(ctx); err != nil {
		return err
	}
	// Anything committed while we were not listening is unknown to the readers.
	s.notifier.publishAll()
	s.tellObservers(nil)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s.handleNotification(n.Payload)
	}
}

func (s *Store) handleNotification(payload string) {
	proc, body, ok := strings.Cut(payload, "|")
	if !ok || proc == s.procID {
		return
	}
	if body == "*" {
		s.notifier.publishAll()
		s.tellObservers(nil)
		return
	}
	items := strings.Split(body, ",")
	changes := make([]Change, 0, len(items))
	for _, item := range items {
		parts := strings.Split(item, ":")
		if len(parts) != 4 {
			continue
		}
		id, err1 := strconv.ParseInt(parts[0], 10, 64)
		seq, err2 := strconv.ParseInt(parts[1], 10, 64)
		pos, err3 := strconv.ParseInt(parts[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		st := tailState{tail: Offset{Seq: seq, Pos: pos}, closed: strings.Contains(parts[3], "c"),
			gone: strings.Contains(parts[3], "g"), known: true}
		if st.gone {
			s.idents.dropID(id) // deleted through another process
		}
		s.notifier.publish(id, st)
		changes = append(changes, Change{StreamID: id, Tail: st.tail, Closed: st.closed})
	}
	if len(changes) > 0 {
		s.tellObservers(changes)
	}
}
