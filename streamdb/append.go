package streamdb

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// AppendRequest is one append (or close) of a stream. Messages are stored messages:
// a JSON-mode body must already be split with SplitJSON.
type AppendRequest struct {
	Path string
	// ContentType, when set and the request carries messages, must match the stream's.
	ContentType string
	Messages    [][]byte
	// Close closes the stream after appending Messages (which may be empty).
	Close bool
	// StreamSeq is the protocol's optional writer sequence: byte-wise greater than the last.
	StreamSeq string
	// Producer makes the append idempotent per (stream, producer id).
	Producer *ProducerTuple
	// Dedupe makes the append idempotent per (stream, key).
	Dedupe *Dedupe
	// StreamID, when not 0, is the stream the caller decided it may append to: if the
	// stream at Path is another one (deleted and created again since), the append is
	// refused with ErrStreamReplaced.
	StreamID int64
	// Admission lets the caller judge the append from its own rows, in the same
	// transaction; Subject is what it checks.
	Admission *Admission
	Subject   Subject
	// creating marks the initial messages of a stream being created, which are written even
	// when the stream's expiry has already passed.
	creating bool
	// Also are statements of the caller's that run in the append's transaction when the
	// append is admitted (after its messages are written). A request with Also may carry
	// no messages: it then only serializes with the stream's appends and runs Also.
	Also []Statement
	// OnAdmit returns statements of the caller's to run in the append's transaction once
	// the append is admitted and written (not for a duplicate), chosen from the
	// Admission verdict's note: what the caller does about the state its admission saw (a send
	// that resumes a paused entity) commits with the append or not at all.
	OnAdmit func(note string) []Statement
}

// Statement is a SQL statement with its arguments.
type Statement struct {
	SQL  string
	Args []any
}

// Dedupe keys an append. A later append with the same Key and Hash writes nothing and
// gets the first append's Ref back; the same Key with another Hash is ErrDedupeConflict.
type Dedupe struct {
	Key  string
	Hash []byte
	Ref  string
}

// AppendResult describes what an append did.
type AppendResult struct {
	// Tail is the stream's tail after this request (Stream-Next-Offset).
	Tail Offset
	// Offsets holds the end offset of each appended message.
	Offsets []Offset
	// Closed reports the stream is closed after this request.
	Closed bool
	// Duplicate reports a retry recognised by producer state, dedupe key or closing tuple;
	// nothing was written.
	Duplicate bool
	// ProducerEpoch and ProducerSeq echo the producer's state (highest accepted seq).
	ProducerEpoch int64
	ProducerSeq   int64
	// DedupeRef is the first append's Ref when Duplicate came from a dedupe key, and
	// DedupeOffset the offset just after what the first append wrote (the tail when
	// retention has removed its messages): a retry is answered as the first append was.
	DedupeRef    string
	DedupeOffset Offset
	// Note is the note of the Admission's verdict ("" when there was none).
	Note string
	// Diverted reports that the Admission sent the request to the caller's own
	// transaction: nothing was written.
	Diverted bool
}

// appendState is the locked state of the streams one transaction appends to, plus the
// producer and dedupe rows it needs; planning mutates it request by request.
type appendState struct {
	streams   map[string]*Meta // by path; nil entries are absent streams
	producers map[producerKey]*producerState
	dedupe    map[dedupeKey]*dedupeRow
	flagged   map[*Admission]map[string]string // admission -> subject key -> code
	now       time.Time
	sqlNow    *time.Time // the now parameter of the writes (clock.Clock.SQL)
}

type producerKey struct {
	stream int64
	id     string
}

type producerState struct {
	epoch, lastSeq int64
	dirty          bool
}

type dedupeKey struct {
	stream int64
	key    string
}

type dedupeRow struct {
	hash []byte
	ref  string
	seq  int64
	pos  int64 // where the first append ended (-1: unknown, its messages were removed)
	new  bool
}

// queueLoad queues the statements that lock and load everything reqs touch.
func queueLoad(ctx context.Context, b *pgx.Batch, st *appendState, reqs []*AppendRequest) {
	paths := uniquePaths(reqs)
	queue(b, func(db dbsqlc.DBTX) error {
		rows, err := queries.LockStreams(ctx, db, paths)
		for _, r := range rows {
			st.streams[r.Stream.Path] = metaOf(r.Stream, r.ForkSourcePath)
		}
		return err
	})

	var producers dbsqlc.SelectProducersParams
	var dedupe dbsqlc.SelectDedupeParams
	for _, r := range reqs {
		if r.Producer != nil {
			producers.Paths = append(producers.Paths, r.Path)
			producers.ProducerIDs = append(producers.ProducerIDs, r.Producer.ID)
		}
		if r.Dedupe != nil {
			dedupe.Paths = append(dedupe.Paths, r.Path)
			dedupe.Keys = append(dedupe.Keys, r.Dedupe.Key)
		}
	}
	if len(producers.Paths) > 0 {
		queue(b, func(db dbsqlc.DBTX) error {
			rows, err := queries.SelectProducers(ctx, db, producers)
			for _, r := range rows {
				st.producers[producerKey{r.StreamID, r.ProducerID}] = &producerState{epoch: r.Epoch, lastSeq: r.LastSeq}
			}
			return err
		})
	}
	if len(dedupe.Paths) > 0 {
		queue(b, func(db dbsqlc.DBTX) error {
			rows, err := queries.SelectDedupe(ctx, db, dedupe)
			for _, r := range rows {
				st.dedupe[dedupeKey{r.StreamID, r.Key}] = &dedupeRow{hash: r.BodyHash, ref: r.Ref, seq: r.Seq, pos: r.EndPos}
			}
			return err
		})
	}
	seen := map[*Admission]bool{}
	for _, r := range reqs {
		a := r.Admission
		if a == nil || seen[a] {
			continue
		}
		seen[a] = true
		keys, holders, epochs := admissionArgs(reqs, a)
		b.Queue(a.SQL, keys, holders, epochs).Query(func(rows pgx.Rows) error {
			codes := map[string]string{}
			for rows.Next() {
				var key, code string
				if err := rows.Scan(&key, &code); err != nil {
					return err
				}
				codes[key] = code
			}
			st.flagged[a] = codes
			return rows.Err()
		})
	}
}

func newAppendState(now time.Time, sqlNow *time.Time) *appendState {
	return &appendState{
		streams:   map[string]*Meta{},
		producers: map[producerKey]*producerState{},
		dedupe:    map[dedupeKey]*dedupeRow{},
		flagged:   map[*Admission]map[string]string{},
		now:       now,
		sqlNow:    sqlNow,
	}
}

func uniquePaths(reqs []*AppendRequest) []string {
	seen := make(map[string]bool, len(reqs))
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		if !seen[r.Path] {
			seen[r.Path] = true
			out = append(out, r.Path)
		}
	}
	return out
}

func admissionArgs(reqs []*AppendRequest, a *Admission) (keys, holders []string, epochs []int64) {
	for _, r := range reqs {
		if r.Admission == a {
			keys, holders, epochs = append(keys, r.subjectKey()), append(holders, r.Subject.Holder), append(epochs, r.Subject.Epoch)
		}
	}
	return keys, holders, epochs
}

// plan applies one request to the loaded state. It returns the result, or the error the
// caller gets, and records the rows to write in w. Checks run in the protocol's order of
// precedence so that a request breaking several rules gets the documented answer.
func (st *appendState) plan(r *AppendRequest, w *writeSet) (AppendResult, error) {
	m := st.streams[r.Path]
	if m == nil || (m.Expired(st.now) && !r.creating) {
		if m != nil && m.Refcount > 0 {
			return AppendResult{}, ErrGone
		}
		return AppendResult{}, ErrNotFound
	}
	if m.SoftDeleted {
		return AppendResult{}, ErrGone
	}
	if r.StreamID != 0 && r.StreamID != m.ID {
		return AppendResult{}, ErrStreamReplaced
	}
	// A retried keyed append is answered like the first one, whatever happened since.
	if r.Dedupe != nil {
		if d := st.dedupe[dedupeKey{m.ID, r.Dedupe.Key}]; d != nil {
			if !bytes.Equal(d.hash, r.Dedupe.Hash) {
				return AppendResult{}, ErrDedupeConflict
			}
			res := AppendResult{Tail: m.Tail, Closed: m.Closed, Duplicate: true, DedupeRef: d.ref, DedupeOffset: m.Tail}
			if d.pos >= 0 {
				res.DedupeOffset = Offset{Seq: d.seq, Pos: d.pos}
			}
			return res, nil
		}
	}
	note := ""
	if r.Admission != nil {
		if code, flagged := st.flagged[r.Admission][r.subjectKey()]; flagged {
			switch v := r.Admission.Judge(code); v.Kind {
			case Refuse:
				return AppendResult{}, &RefusedError{Err: v.Err}
			case Divert:
				return AppendResult{Tail: m.Tail, Closed: m.Closed, Diverted: true}, nil
			default:
				note = v.Note
			}
		}
	}
	var ps *producerState
	pk := producerKey{}
	if r.Producer != nil {
		pk = producerKey{m.ID, r.Producer.ID}
		ps = st.producers[pk]
		// Zombie fencing wins over everything else, closed streams included.
		if ps != nil && r.Producer.Epoch < ps.epoch {
			return AppendResult{}, &StaleEpochError{Current: ps.epoch}
		}
	}
	if m.Closed {
		if r.Producer != nil && m.ClosedBy != nil && *m.ClosedBy == *r.Producer {
			return AppendResult{Tail: m.Tail, Closed: true, Duplicate: true,
				ProducerEpoch: r.Producer.Epoch, ProducerSeq: r.Producer.Seq}, nil
		}
		if r.Close && len(r.Messages) == 0 && r.Producer == nil {
			w.touch(m) // a close-only POST is a write: it refreshes the TTL
			return AppendResult{Tail: m.Tail, Closed: true}, nil
		}
		return AppendResult{}, &ClosedError{Tail: m.Tail}
	}
	if len(r.Messages) > 0 && r.ContentType != "" && !SameContentType(r.ContentType, m.ContentType) {
		return AppendResult{}, ErrContentType
	}
	var next *producerState
	if r.Producer != nil {
		p := r.Producer
		switch {
		case ps == nil:
			if p.Seq != 0 {
				return AppendResult{}, &SeqGapError{Expected: 0, Received: p.Seq}
			}
			next = &producerState{epoch: p.Epoch, lastSeq: 0}
		case p.Epoch > ps.epoch:
			if p.Seq != 0 {
				return AppendResult{}, ErrEpochSeq
			}
			next = &producerState{epoch: p.Epoch, lastSeq: 0}
		case p.Seq <= ps.lastSeq:
			return AppendResult{Tail: m.Tail, Closed: m.Closed, Duplicate: true,
				ProducerEpoch: ps.epoch, ProducerSeq: ps.lastSeq}, nil
		case p.Seq == ps.lastSeq+1:
			next = &producerState{epoch: p.Epoch, lastSeq: p.Seq}
		default:
			return AppendResult{}, &SeqGapError{Expected: ps.lastSeq + 1, Received: p.Seq}
		}
	}
	if r.StreamSeq != "" && m.LastStreamSeq != nil && r.StreamSeq <= *m.LastStreamSeq {
		return AppendResult{}, ErrStreamSeq
	}
	if len(r.Messages) == 0 && !r.Close && len(r.Also) == 0 {
		return AppendResult{}, ErrEmptyAppend
	}

	res := AppendResult{Offsets: make([]Offset, 0, len(r.Messages)), Note: note}
	for _, msg := range r.Messages {
		m.Tail.Seq++
		m.Tail.Pos += int64(len(msg))
		w.addMessage(m.ID, m.Tail, msg)
		res.Offsets = append(res.Offsets, m.Tail)
	}
	if r.StreamSeq != "" {
		s := r.StreamSeq
		m.LastStreamSeq = &s
	}
	if next != nil {
		next.dirty = true
		st.producers[pk] = next
		res.ProducerEpoch, res.ProducerSeq = next.epoch, next.lastSeq
	}
	if r.Close {
		m.Closed = true
		if r.Producer != nil {
			p := *r.Producer
			m.ClosedBy = &p
		}
	}
	if r.Dedupe != nil {
		st.dedupe[dedupeKey{m.ID, r.Dedupe.Key}] = &dedupeRow{hash: r.Dedupe.Hash, ref: r.Dedupe.Ref, seq: m.Tail.Seq, pos: m.Tail.Pos, new: true}
	}
	w.also = append(w.also, r.Also...)
	if r.OnAdmit != nil {
		w.also = append(w.also, r.OnAdmit(note)...)
	}
	if len(r.Messages) > 0 || r.Close || r.StreamSeq != "" || len(r.Also) == 0 {
		w.touch(m) // a statement-only request leaves the stream row alone
	}
	res.Tail, res.Closed = m.Tail, m.Closed
	return res, nil
}

// writeSet collects the rows a transaction writes, so they go out as a few set-based
// statements instead of one statement per request.
type writeSet struct {
	msgStream []int64
	msgSeq    []int64
	msgPos    []int64
	msgData   [][]byte
	touched   map[int64]*Meta
	order     []int64
	also      []Statement
	written   map[int64][]Message // by stream, in order
}

func (w *writeSet) addMessage(stream int64, end Offset, data []byte) {
	w.msgStream = append(w.msgStream, stream)
	w.msgSeq = append(w.msgSeq, end.Seq)
	w.msgPos = append(w.msgPos, end.Pos)
	w.msgData = append(w.msgData, data)
	if w.written == nil {
		w.written = map[int64][]Message{}
	}
	w.written[stream] = append(w.written[stream], Message{Data: data, End: end})
}

func (w *writeSet) touch(m *Meta) {
	if w.touched == nil {
		w.touched = map[int64]*Meta{}
	}
	if _, ok := w.touched[m.ID]; !ok {
		w.order = append(w.order, m.ID)
	}
	w.touched[m.ID] = m
}

func (w *writeSet) empty() bool { return len(w.touched) == 0 && len(w.also) == 0 }

// queueWrites queues the statements that persist w and the producer/dedupe changes in st.
func queueWrites(ctx context.Context, b *pgx.Batch, st *appendState, w *writeSet) {
	if len(w.msgStream) > 0 {
		messages := dbsqlc.InsertMessagesParams{StreamIDs: w.msgStream, Seqs: w.msgSeq, EndPositions: w.msgPos, Data: w.msgData}
		queue(b, func(db dbsqlc.DBTX) error { return queries.InsertMessages(ctx, db, messages) })
	}
	if len(w.touched) > 0 {
		tails := tailsOf(w, st.sqlNow)
		queue(b, func(db dbsqlc.DBTX) error { return queries.UpdateTails(ctx, db, tails) })
	}
	var producers dbsqlc.UpsertProducersParams
	for k, ps := range st.producers {
		if ps.dirty {
			producers.StreamIDs = append(producers.StreamIDs, k.stream)
			producers.ProducerIDs = append(producers.ProducerIDs, k.id)
			producers.Epochs = append(producers.Epochs, ps.epoch)
			producers.LastSeqs = append(producers.LastSeqs, ps.lastSeq)
		}
	}
	if len(producers.StreamIDs) > 0 {
		queue(b, func(db dbsqlc.DBTX) error { return queries.UpsertProducers(ctx, db, producers) })
	}
	var dedupe dbsqlc.InsertDedupeParams
	for k, d := range st.dedupe {
		if d.new {
			dedupe.StreamIDs = append(dedupe.StreamIDs, k.stream)
			dedupe.Keys = append(dedupe.Keys, k.key)
			dedupe.BodyHashes = append(dedupe.BodyHashes, d.hash)
			dedupe.Refs = append(dedupe.Refs, d.ref)
			dedupe.Seqs = append(dedupe.Seqs, d.seq)
		}
	}
	if len(dedupe.StreamIDs) > 0 {
		queue(b, func(db dbsqlc.DBTX) error { return queries.InsertDedupe(ctx, db, dedupe) })
	}
	for _, st := range w.also {
		b.Queue(st.SQL, st.Args...)
	}
}

// tailsOf is the new state of every stream w touched, one array element per stream;
// now stamps the access of TTL streams.
func tailsOf(w *writeSet, now *time.Time) dbsqlc.UpdateTailsParams {
	n := len(w.order)
	t := dbsqlc.UpdateTailsParams{
		Now:            now,
		IDs:            make([]int64, 0, n),
		TailSeqs:       make([]int64, 0, n),
		TailPositions:  make([]int64, 0, n),
		Closed:         make([]bool, 0, n),
		ClosedBy:       make([]bool, 0, n),
		CloserIDs:      make([]string, 0, n),
		CloserEpochs:   make([]int64, 0, n),
		CloserSeqs:     make([]int64, 0, n),
		LastStreamSeqs: make([]string, 0, n),
	}
	for _, id := range w.order {
		m := w.touched[id]
		var closer ProducerTuple
		if m.ClosedBy != nil {
			closer = *m.ClosedBy
		}
		var lss string // none: a stream seq is never empty
		if m.LastStreamSeq != nil {
			lss = *m.LastStreamSeq
		}
		t.IDs = append(t.IDs, m.ID)
		t.TailSeqs = append(t.TailSeqs, m.Tail.Seq)
		t.TailPositions = append(t.TailPositions, m.Tail.Pos)
		t.Closed = append(t.Closed, m.Closed)
		t.ClosedBy = append(t.ClosedBy, m.ClosedBy != nil)
		t.CloserIDs = append(t.CloserIDs, closer.ID)
		t.CloserEpochs = append(t.CloserEpochs, closer.Epoch)
		t.CloserSeqs = append(t.CloserSeqs, closer.Seq)
		t.LastStreamSeqs = append(t.LastStreamSeqs, lss)
	}
	return t
}

// runAppends locks, plans and writes reqs inside tx. It returns one result or error per
// request (in order) and the streams whose state changed, for notification after commit.
// The returned error is a failure of the transaction itself.
func (s *Store) runAppends(ctx context.Context, tx batchSender, now time.Time, reqs []*AppendRequest, notify bool) ([]AppendResult, []error, *writeSet, error) {
	return s.runAppendsWith(ctx, tx, now, reqs, notify, "", "")
}

// batchSender is a connection or transaction that sends pipelined batches.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// runAppendsWith is runAppends with statements opening the first batch and closing the
// last one: the group-commit lanes send BEGIN with the locking reads and COMMIT with the
// writes, so a whole transaction costs two round trips.
func (s *Store) runAppendsWith(ctx context.Context, tx batchSender, now time.Time, reqs []*AppendRequest, notify bool, open, close string) ([]AppendResult, []error, *writeSet, error) {
	st := newAppendState(now, s.clock.SQL())
	b := &pgx.Batch{}
	if open != "" {
		b.Queue(open)
	}
	queueLoad(ctx, b, st, reqs)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, nil, fmt.Errorf("streamdb: load append state: %w", err)
	}
	results := make([]AppendResult, len(reqs))
	errs := make([]error, len(reqs))
	w := &writeSet{}
	for i, r := range reqs {
		results[i], errs[i] = st.plan(r, w)
	}
	b = &pgx.Batch{}
	if !w.empty() {
		queueWrites(ctx, b, st, w)
		if notify && len(w.touched) > 0 && s.notifyNeeded() {
			s.queueNotify(ctx, b, w)
		}
	}
	if close != "" {
		b.Queue(close)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return nil, nil, nil, fmt.Errorf("streamdb: write appends: %w", err)
		}
	}
	return results, errs, w, nil
}
