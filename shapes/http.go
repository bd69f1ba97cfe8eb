package shapes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/entityd/entityd/internal/httpx"
)

// Prefix is where the shape endpoint is mounted (GET Prefix + "/v1/shape").
const Prefix = "/_electric/electric"

// Error codes of the shape endpoint (the reference's).
const (
	codeTableNotAllowed = "TABLE_NOT_ALLOWED"
	codeInvalidWhere    = "INVALID_WHERE"
)

// Routes registers GET /v1/shape under Prefix.
func (s *Service) Routes(r chi.Router, wrap func(httpx.HandlerFunc) http.HandlerFunc) {
	r.Method(http.MethodGet, "/v1/shape", wrap(s.shape))
}

func bad(msg string) error { return httpx.New(http.StatusBadRequest, httpx.CodeInvalidRequest, msg) }

// request is a parsed shape request.
type request struct {
	v      *view
	handle string // the handle of this view now
	sent   string // the handle the client sent ("" on a first request)
	offset string
	from   offset
	cursor *snapshotCursor // the offset continues a snapshot
	live   bool
}

func (s *Service) parse(ctx context.Context, r *http.Request) (*request, error) {
	q := r.URL.Query()
	name := q.Get("table")
	if name == "" {
		return nil, bad("table is required")
	}
	t := tables[strings.TrimPrefix(name, "public.")]
	if t == nil {
		return nil, httpx.New(http.StatusForbidden, codeTableNotAllowed, "Table "+strconv.Quote(name)+" is not available as a shape ("+tableNames+")")
	}
	v := &view{t: t, cols: t.columns}
	if c := q.Get("columns"); c != "" {
		v.cols = nil
		seen := map[string]bool{}
		for _, col := range strings.Split(c, ",") {
			col = strings.Trim(strings.TrimSpace(col), `"`)
			if _, ok := t.types[col]; !ok {
				return nil, bad("columns: unknown column " + strconv.Quote(col))
			}
			if !seen[col] {
				seen[col] = true
				v.cols = append(v.cols, col)
			}
		}
		if !seen[t.key] {
			return nil, bad("columns must include the primary key " + strconv.Quote(t.key))
		}
	}
	params := map[string]string{}
	for k, vals := range q {
		if n, ok := strings.CutPrefix(k, "params["); ok && strings.HasSuffix(n, "]") && len(vals) > 0 {
			params[strings.TrimSuffix(n, "]")] = vals[0]
		}
	}
	w, err := parseWhere(q.Get("where"), t, params)
	if err != nil {
		var we *whereError
		if errors.As(err, &we) {
			return nil, httpx.New(http.StatusBadRequest, codeInvalidWhere, we.msg)
		}
		return nil, err
	}
	v.where = w
	req := &request{v: v, sent: q.Get("handle"), offset: q.Get("offset"), live: q.Get("live") == "true"}
	if req.offset == "" {
		req.offset = "-1"
	}
	var epoch, trimmed string
	if err := s.db.QueryRow(ctx, sqlState).Scan(&epoch, &trimmed); err != nil {
		return nil, err
	}
	req.handle = handleOf(name, q.Get("where"), params, v.cols, epoch)
	switch req.offset {
	case "-1", "now":
		if req.live && req.offset == "-1" {
			return nil, bad("live needs an offset from an earlier response")
		}
	default:
		o, ok := parseOffset(req.offset)
		c, isCursor, stale := parseSnapshotCursor(req.offset)
		if isCursor {
			// a page reads the changes from the previous page's horizon on
			req.cursor, o, ok = &c, offset{pos: position{txid: c.seen.xmin}}, true
			req.live = false // a snapshot is not live yet
		}
		if !ok && !stale {
			return nil, bad("offset must be -1, now, or an offset from an earlier response")
		}
		if req.sent == "" {
			return nil, bad("handle is required with an offset")
		}
		req.from = o
		cut, _ := strconv.ParseUint(trimmed, 10, 64)
		if stale || req.sent != req.handle || (cut > 0 && o.pos.txid <= cut) {
			return req, errMustRefetch
		}
	}
	return req, nil
}

var errMustRefetch = errors.New("must refetch")

// handleOf names a shape: its definition and the log's epoch (a new database, or a
// reset log, is a new shape for every client).
func handleOf(table, where string, params map[string]string, cols []string, epoch string) string {
	h := sha256.New()
	h.Write([]byte(table + "\x00" + where + "\x00" + strings.Join(cols, ",")))
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h.Write([]byte("\x00" + k + "=" + params[k]))
	}
	return hex.EncodeToString(h.Sum(nil)[:8]) + "-" + epoch
}

func (s *Service) shape(w http.ResponseWriter, r *http.Request) error {
	req, err := s.parse(r.Context(), r)
	if errors.Is(err, errMustRefetch) {
		w.Header().Set("electric-handle", req.handle)
		w.Header().Set("Cache-Control", "no-store")
		httpx.WriteJSON(w, http.StatusConflict, []message{{Headers: map[string]any{"control": "must-refetch"}}})
		return nil
	}
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("electric-handle", req.handle)
	if !req.live {
		h.Set("electric-schema", req.v.t.schemaHeader(req.v.cols))
	}
	var out []message
	var next string // the offset the client continues from
	switch req.offset {
	case "-1":
		page, c, more, err := snapshotPage(r.Context(), s.db, req.v, nil, s.opts.SnapshotRows)
		if err != nil {
			return err
		}
		if out, next, err = s.afterSnapshotPage(r.Context(), w, req.v, page, c, more); err != nil {
			return err
		}
	case "now": // control messages only: nothing to scope
		at, err := s.horizon(r.Context())
		if err != nil {
			return err
		}
		out, next = append(out, upToDate(at)), at.String()
		h.Set("electric-up-to-date", "")
	default:
		if req.cursor != nil {
			page, c, more, err := snapshotPage(r.Context(), s.db, req.v, req.cursor, s.opts.SnapshotRows)
			if err != nil {
				return err
			}
			if out, next, err = s.afterSnapshotPage(r.Context(), w, req.v, page, c, more); err != nil {
				return err
			}
			break
		}
		changed, at, exhausted, err := s.read(r.Context(), req)
		if err != nil {
			return err
		}
		out, next = changed, at.String()
		if exhausted {
			out = append(out, upToDate(at.pos))
			h.Set("electric-up-to-date", "")
		}
	}
	h.Set("electric-offset", next)
	if out == nil {
		out = []message{} // a page of a snapshot may hold none of the shape's rows
	}
	if req.live {
		h.Set("electric-cursor", strconv.FormatInt(time.Now().Unix()/20, 10))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// afterSnapshotPage completes a response holding a page of a snapshot, and returns it
// with the offset to continue from: another page follows (the cursor), or this was the
// last one and the changes its snapshot did not see follow in the same response, up to
// date when they are exhausted.
func (s *Service) afterSnapshotPage(ctx context.Context, w http.ResponseWriter, v *view, page []message, c snapshotCursor, more bool) ([]message, string, error) {
	if more {
		out, err := s.scope(ctx, v.t.name, page)
		return out, c.String(), err
	}
	changed, at, exhausted, err := changes(ctx, s.db, v, offset{pos: position{txid: c.seen.xmin}, seen: c.seen}, s.opts.ChunkRows)
	if err != nil {
		return nil, "", err
	}
	page = append(page, snapshotEnd(c.seen))
	out, err := s.scope(ctx, v.t.name, append(page, changed...))
	if err != nil {
		return nil, "", err
	}
	if exhausted {
		out = append(out, upToDate(at.pos))
		w.Header().Set("electric-up-to-date", "")
	}
	return out, at.String(), nil
}

// scope drops the rows the caller may not see (their changes as well: a shape shows a
// row only while it is visible when the change is served). Control messages stay.
func (s *Service) scope(ctx context.Context, table string, out []message) ([]message, error) {
	if s.opts.Scope == nil {
		return out, nil
	}
	var rows []Row
	for _, m := range out {
		if m.pk != "" {
			rows = append(rows, Row{Key: m.pk, Values: m.row, Deleted: m.Headers["operation"] == "delete"})
		}
	}
	if len(rows) == 0 {
		return out, nil // no rows: not even the caller's grants need loading (a waiting live read)
	}
	visible, err := s.opts.Scope(ctx, table)
	if err != nil {
		return nil, err
	}
	shown, err := visible(ctx, rows)
	if err != nil {
		return nil, err
	}
	kept := out[:0]
	for _, m := range out {
		if m.pk == "" || shown[m.pk] {
			kept = append(kept, m)
		}
	}
	return kept, nil
}

// read answers an offset: the changes after it the caller may see, or for a live
// request that is up to date, the first such changes to become final within the
// long-poll (else none).
//
// A live request wakes for every change of the table, but answers only for one the
// caller may see: answering early for a row scope hides would tell the caller when
// another tenant's entity changed. It moves its offset past the hidden changes (they
// are never read again) and waits on; when the long-poll ends it answers up to date at
// that offset, as for no change at all.
func (s *Service) read(ctx context.Context, req *request) ([]message, offset, bool, error) {
	var deadline <-chan time.Time
	if req.live {
		t := time.NewTimer(s.opts.LongPoll)
		defer t.Stop()
		deadline = t.C
	}
	for {
		changed, done := (<-chan struct{})(nil), func() {}
		if req.live {
			changed, done = s.w.wait() // before the read: a change after it still wakes us
		}
		out, at, exhausted, err := changes(ctx, s.db, req.v, req.from, s.opts.ChunkRows)
		if err == nil {
			out, err = s.scope(ctx, req.v.t.name, out)
		}
		if !req.live || err != nil || len(out) > 0 {
			done()
			return out, at, exhausted, err
		}
		req.from = at // nothing the caller may see yet (other rows moved the offset)
		if !exhausted {
			changed = closedChan // more of the log to look through first
		}
		select {
		case <-changed:
			done()
		case <-deadline:
			done()
			return nil, at, exhausted, nil
		case <-s.opts.Live:
			done()
			return nil, at, exhausted, nil
		case <-ctx.Done():
			done()
			return nil, at, exhausted, ctx.Err()
		}
	}
}

// closedChan is always ready: a live read that has not reached the end of the log reads
// on without waiting.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// horizon is the position up to which every change is final now.
func (s *Service) horizon(ctx context.Context) (position, error) {
	var h string
	if err := s.db.QueryRow(ctx, sqlHorizon).Scan(&h); err != nil {
		return position{}, err
	}
	t, err := strconv.ParseUint(h, 10, 64)
	return position{txid: t}, err
}
