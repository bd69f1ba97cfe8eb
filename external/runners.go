package external

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/streamdb"
)

// RunnersPrefix is where the runner control plane is served.
const RunnersPrefix = "/_electric/runners"

const (
	defaultRunnerLease = 30 * time.Second
	maxRunnerBody      = 64 << 10
	maxRunnerIDBytes   = 128
)

// Runners serves /_electric/runners: pull-wake runners register (with a wake stream),
// keep a liveness lease by heartbeats, are enabled or disabled, and claim the wakes of
// their subscription, runner:<id>, receiving the same notification a webhook would.
type Runners struct {
	Store    *streamdb.Store
	Subs     *dssub.Service
	Registry *entity.Registry
	Origin   func(r *http.Request) string // where callbacks point (the request's origin)
	// Privileged reports principals that may act on any runner (nil: system ones).
	Privileged func(principal.Principal) bool
	// MaxPerOwner bounds the runners one principal registers (0: no bound).
	MaxPerOwner int
}

// Routes registers the routes under RunnersPrefix.
func (rs *Runners) Routes(r chi.Router, wrap func(httpx.HandlerFunc) http.HandlerFunc) {
	r.Method(http.MethodPost, "/", wrap(rs.register))
	r.Method(http.MethodGet, "/", wrap(rs.list))
	r.Method(http.MethodGet, "/{id}", wrap(rs.owned(rs.get)))
	r.Method(http.MethodGet, "/{id}/health", wrap(rs.owned(rs.health)))
	r.Method(http.MethodPost, "/{id}/heartbeat", wrap(rs.owned(rs.heartbeat)))
	r.Method(http.MethodPost, "/{id}/enable", wrap(rs.owned(rs.setAdmin("enabled"))))
	r.Method(http.MethodPost, "/{id}/disable", wrap(rs.owned(rs.setAdmin("disabled"))))
	r.Method(http.MethodPost, "/{id}/claim", wrap(rs.owned(rs.claim)))
}

// caller is the principal the api authenticated for the request.
func caller(r *http.Request) principal.Principal {
	p, _ := principal.FromContext(r.Context())
	return p
}

func (rs *Runners) privileged(p principal.Principal) bool {
	if rs.Privileged != nil {
		return rs.Privileged(p)
	}
	return p.IsSystem()
}

// owned lets only the runner's owner (or a privileged principal) use a runner route:
// its claims hand out the wakes, and with them write tokens. A stranger gets 403, as
// the reference answers for a runner it does not own.
func (rs *Runners) owned(h httpx.HandlerFunc) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		run, err := scanRunner(rs.Store.DB().QueryRow(r.Context(), sqlSelectRunner, chi.URLParam(r, "id")))
		if err != nil {
			return err
		}
		if run == nil {
			return h(w, r) // the handler checks its body, then answers 404
		}
		if who := caller(r); run.OwnerPrincipal != who.String() && !rs.privileged(who) {
			return httpx.New(http.StatusForbidden, "FORBIDDEN", "Runner "+jsonQuote(run.ID)+" belongs to another principal")
		}
		return h(w, r)
	}
}

// Runner is a registered runner.
type Runner struct {
	ID              string          `json:"id"`
	Label           string          `json:"label"`
	OwnerPrincipal  string          `json:"owner_principal"`
	Kind            string          `json:"kind"`
	AdminStatus     string          `json:"admin_status"`
	WakeStream      string          `json:"wake_stream"`
	SandboxProfiles json.RawMessage `json:"sandbox_profiles"`
	LeaseUntil      *time.Time      `json:"liveness_lease_expires_at"`
	LastHeartbeatAt *time.Time      `json:"last_heartbeat_at"`
	WakeOffset      string          `json:"wake_stream_offset,omitempty"`
	Diagnostics     json.RawMessage `json:"diagnostics,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	now             time.Time
}

func scanRunner(row pgx.Row) (*Runner, error) {
	r := &Runner{}
	var profiles, diag string
	err := row.Scan(&r.ID, &r.Label, &r.OwnerPrincipal, &r.Kind, &r.AdminStatus, &r.WakeStream, &profiles,
		&r.LeaseUntil, &r.LastHeartbeatAt, &r.WakeOffset, &diag, &r.CreatedAt, &r.UpdatedAt, &r.now)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.SandboxProfiles = json.RawMessage(profiles)
	if diag != "" {
		r.Diagnostics = json.RawMessage(diag)
	}
	return r, nil
}

// live reports whether the runner's liveness lease holds.
func (r *Runner) live() bool { return r.LeaseUntil != nil && r.LeaseUntil.After(r.now) }

// SubscriptionID is the pull-wake subscription a runner claims from.
func SubscriptionID(runnerID string) string { return "runner:" + runnerID }

func bad(msg string) error { return httpx.New(http.StatusBadRequest, httpx.CodeInvalidRequest, msg) }

func notFound(id string) error {
	return httpx.New(http.StatusNotFound, "NOT_FOUND", "Runner "+jsonQuote(id)+" not found")
}

func jsonQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func (rs *Runners) load(ctx context.Context, id string) (*Runner, error) {
	r, err := scanRunner(rs.Store.DB().QueryRow(ctx, sqlSelectRunner, id))
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, notFound(id)
	}
	return r, nil
}

func (rs *Runners) register(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		ID              string          `json:"id"`
		Label           string          `json:"label"`
		OwnerPrincipal  *string         `json:"owner_principal"`
		Kind            string          `json:"kind"`
		AdminStatus     string          `json:"admin_status"`
		WakeStream      string          `json:"wake_stream"`
		SandboxProfiles json.RawMessage `json:"sandbox_profiles"`
	}
	if err := httpx.ReadControlJSON(w, r, &body, maxRunnerBody); err != nil {
		return err
	}
	if body.ID == "" || len(body.ID) > maxRunnerIDBytes || strings.ContainsAny(body.ID, "/:") || !textpolicy.Valid(body.ID, textpolicy.Name) {
		return bad("id must be a non-empty name of at most 128 bytes without / or :")
	}
	if body.Label == "" {
		body.Label = body.ID
	}
	if len(body.Label) > 256 || !textpolicy.Valid(body.Label, textpolicy.Name) {
		return bad("label must be at most 256 bytes without control characters")
	}
	who := caller(r)
	owner := who.String() // a runner belongs to the principal registering it
	if body.OwnerPrincipal != nil && *body.OwnerPrincipal != owner {
		return httpx.New(http.StatusForbidden, "FORBIDDEN", "A runner's owner_principal must be the caller ("+owner+")")
	}
	if err := rs.checkBindings(r.Context(), body.ID, owner); err != nil {
		return err
	}
	if body.Kind == "" {
		body.Kind = "local"
	}
	switch body.Kind {
	case "local", "cloud-worker", "sandbox", "ci", "server":
	default:
		return bad("kind must be local, cloud-worker, sandbox, ci or server")
	}
	if body.AdminStatus == "" {
		body.AdminStatus = "enabled"
	}
	if body.AdminStatus != "enabled" && body.AdminStatus != "disabled" {
		return bad("admin_status must be enabled or disabled")
	}
	if body.WakeStream == "" {
		body.WakeStream = entitypath.RunnerWake(body.ID)
	}
	if !strings.HasPrefix(body.WakeStream, "/") || textpolicy.CheckPath(body.WakeStream, 1024) != "" ||
		strings.HasPrefix(body.WakeStream, "/_electric") || strings.HasPrefix(body.WakeStream, "/__ds") {
		return bad("wake_stream must be a stream path outside /_electric and /__ds")
	}
	if _, _, _, ok := entitypath.Parse(body.WakeStream); ok ||
		(entitypath.IsRunnerWake(body.WakeStream) && body.WakeStream != entitypath.RunnerWake(body.ID)) {
		return bad("wake_stream must not be an entity's stream path or another runner's wake stream")
	}
	if len(body.SandboxProfiles) == 0 || string(body.SandboxProfiles) == "null" {
		body.SandboxProfiles = json.RawMessage("[]")
	} else if body.SandboxProfiles[0] != '[' {
		return bad("sandbox_profiles must be an array")
	}
	var out *Runner
	created := false
	err := rs.Store.WithTx(r.Context(), func(ctx context.Context, tx *streamdb.Tx) error {
		created = false
		existing, err := scanRunner(tx.QueryRow(ctx, sqlSelectRunner, body.ID))
		if err != nil {
			return err
		}
		if existing != nil && existing.OwnerPrincipal != owner {
			return httpx.New(http.StatusForbidden, "FORBIDDEN", "Runner "+jsonQuote(body.ID)+" belongs to another principal")
		}
		if existing != nil {
			body.WakeStream = existing.WakeStream // a runner keeps the wake stream it was registered with
		} else if rs.MaxPerOwner > 0 && !quota.Exempt(who) {
			var n int
			if err := tx.QueryRow(ctx, sqlCountRunnersOf, owner, rs.MaxPerOwner+1).Scan(&n); err != nil {
				return err
			}
			if err := quota.Check(who, n, 1, rs.MaxPerOwner, "runners", "ENTITYD_QUOTA_RUNNERS"); err != nil {
				return err
			}
		}
		// The wake stream is the server's: created here, owned by the runner's owner and
		// written only by the server. A stream already at the path must be this
		// owner's wake stream (the runner registering again), never someone's stream
		// that wakes would then be appended into.
		_, _, err = tx.Create(ctx, body.WakeStream, streamdb.CreateConfig{ContentType: "application/json",
			Access: streamdb.Access{Kind: streamdb.AccessWake, Owner: owner},
			CheckExisting: func(m *streamdb.Meta) error {
				if m.Access.Kind != streamdb.AccessWake || m.Access.Owner != owner {
					return httpx.New(http.StatusConflict, "STREAM_EXISTS",
						"wake_stream "+jsonQuote(body.WakeStream)+" is an existing stream that is not a wake stream of "+owner)
				}
				return nil
			}}, nil)
		if err != nil && !errors.Is(err, streamdb.ErrExists) {
			return err
		}
		got, err := scanRunner(tx.QueryRow(ctx, sqlInsertRunner, body.ID, body.Label, owner, body.Kind, body.AdminStatus,
			body.WakeStream, string(body.SandboxProfiles)))
		if err != nil {
			return err
		}
		if got != nil {
			out, created = got, true
			return nil
		}
		if existing, err = scanRunner(tx.QueryRow(ctx, sqlSelectRunner, body.ID)); err != nil || existing == nil {
			return err
		}
		if existing.OwnerPrincipal != owner {
			return httpx.New(http.StatusForbidden, "FORBIDDEN", "Runner "+jsonQuote(body.ID)+" belongs to another principal")
		}
		out, err = scanRunner(tx.QueryRow(ctx, sqlUpdateRunner, body.ID, body.Label, body.Kind, string(body.SandboxProfiles)))
		return err
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpx.WriteJSON(w, status, out)
	return nil
}

func (rs *Runners) list(w http.ResponseWriter, r *http.Request) error {
	owner := r.URL.Query().Get("owner_principal")
	if who := caller(r); !rs.privileged(who) {
		owner = who.String() // others' runners are not listed
	}
	rows, err := rs.Store.DB().Query(r.Context(), sqlListRunners, owner)
	if err != nil {
		return err
	}
	defer rows.Close()
	out := []*Runner{}
	for rows.Next() {
		run, err := scanRunner(rows)
		if err != nil {
			return err
		}
		out = append(out, run)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (rs *Runners) get(w http.ResponseWriter, r *http.Request) error {
	run, err := rs.load(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, run)
	return nil
}

// health is healthy while the liveness lease holds and the runner is enabled,
// degraded when disabled but alive, unhealthy when the lease lapsed or never began.
func (rs *Runners) health(w http.ResponseWriter, r *http.Request) error {
	run, err := rs.load(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	status := "unhealthy"
	switch {
	case run.live() && run.AdminStatus == "enabled":
		status = "healthy"
	case run.live():
		status = "degraded"
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"id": run.ID, "status": status, "admin_status": run.AdminStatus,
		"liveness_lease_expires_at": run.LeaseUntil, "last_heartbeat_at": run.LastHeartbeatAt})
	return nil
}

func (rs *Runners) heartbeat(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		LeaseMs          *json.Number    `json:"lease_ms"`
		WakeStreamOffset *string         `json:"wake_stream_offset"`
		Diagnostics      json.RawMessage `json:"diagnostics"`
	}
	if err := httpx.ReadControlJSON(w, r, &body, maxRunnerBody); err != nil {
		return err
	}
	lease := defaultRunnerLease
	if body.LeaseMs != nil {
		n, err := body.LeaseMs.Int64()
		if err != nil || n < 1000 || n > 600_000 {
			return bad("lease_ms must be an integer from 1000 to 600000")
		}
		lease = time.Duration(n) * time.Millisecond
	}
	var diag *string
	if len(body.Diagnostics) > 0 && string(body.Diagnostics) != "null" {
		d := string(body.Diagnostics)
		diag = &d
	}
	run, err := scanRunner(rs.Store.DB().QueryRow(r.Context(), sqlHeartbeat, chi.URLParam(r, "id"), lease, body.WakeStreamOffset, diag))
	if err != nil {
		return err
	}
	if run == nil {
		return notFound(chi.URLParam(r, "id"))
	}
	httpx.WriteJSON(w, http.StatusOK, run)
	return nil
}

func (rs *Runners) setAdmin(status string) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		run, err := scanRunner(rs.Store.DB().QueryRow(r.Context(), sqlSetAdminStatus, chi.URLParam(r, "id"), status))
		if err != nil {
			return err
		}
		if run == nil {
			return notFound(chi.URLParam(r, "id"))
		}
		httpx.WriteJSON(w, http.StatusOK, run)
		return nil
	}
}

// claim gives the runner the current wake of its subscription: the same notification a
// webhook carries (triggerEvent "message_received"), or 204 when there is no work.
func (rs *Runners) claim(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		SubscriptionID string `json:"subscription_id"`
	}
	if err := httpx.ReadControlJSON(w, r, &body, maxRunnerBody); err != nil {
		return err
	}
	run, err := rs.load(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	if run.AdminStatus != "enabled" {
		return httpx.New(http.StatusConflict, "NOT_RUNNING", "Runner "+jsonQuote(run.ID)+" is disabled")
	}
	sub := SubscriptionID(run.ID)
	if body.SubscriptionID != "" {
		if body.SubscriptionID != sub && !strings.HasPrefix(body.SubscriptionID, sub+":") {
			return bad("subscription_id must be " + sub + " or start with it")
		}
		sub = body.SubscriptionID
	}
	c, err := rs.Subs.ClaimPull(r.Context(), sub, run.ID)
	if errors.Is(err, dssub.ErrNoSubscription) && body.SubscriptionID != "" {
		return httpx.New(http.StatusNotFound, "SUBSCRIPTION_NOT_FOUND", "Subscription "+jsonQuote(sub)+" not found")
	}
	// The runner's own subscription exists once an entity is dispatched to it: until
	// then there is nothing to do, as when it has no pending work.
	if errors.Is(err, dssub.ErrNoPendingWork) || errors.Is(err, dssub.ErrNoSubscription) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	n, err := notification(r.Context(), rs.Registry, dssub.WakeContext{SubscriptionID: sub, WakeID: c.WakeID,
		Generation: c.Generation, StreamPath: c.StreamPath, TailOffset: c.TailOffset, CallbackToken: c.Token,
		Origin: rs.Origin(r)}, "message_received")
	if errors.Is(err, dssub.ErrNotWanted) {
		// A paused or ended entity is not woken (as in Electric): the wake is finished,
		// and the runner is told there is nothing to do for it.
		cb := dssub.WakeCallback{WakeID: c.WakeID, Token: c.Token, Generation: c.Generation, Done: true}
		for _, st := range c.Streams {
			cb.Acks = append(cb.Acks, dssub.Ack{Path: st.Path, Offset: st.TailOffset})
		}
		if _, _, err := rs.Subs.Callback(r.Context(), cb); err != nil {
			return err
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"done": true})
		return nil
	}
	if err != nil {
		return err
	}
	if n == nil {
		n = map[string]any{"wakeId": c.WakeID, "wake_id": c.WakeID, "epoch": c.Generation, "token": c.Token,
			"claimToken": c.Token, "streamPath": c.StreamPath}
	}
	var streams []map[string]any
	for _, st := range c.Streams {
		path := "/" + strings.TrimPrefix(st.Path, "/")
		offset := st.TailOffset // where the runtime's wake starts: see dssub.PullClaim.StartOffset
		if path == c.StreamPath && c.StartOffset != "" {
			offset = c.StartOffset
		}
		streams = append(streams, map[string]any{"path": path, "offset": offset,
			"acked_offset": st.AckedOffset, "has_pending": st.Pending})
	}
	n["streams"] = streams
	n["subscription_id"] = sub
	httpx.WriteJSON(w, http.StatusOK, n)
	return nil
}

// checkBindings refuses to register runner id for owner when an entity type names the
// id for another principal: the name is theirs, and a runner registered under it by
// anyone else would never be dispatched to anyway.
func (rs *Runners) checkBindings(ctx context.Context, id, owner string) error {
	bindings, err := rs.Registry.RunnerBindings(ctx, id)
	if err != nil {
		return err
	}
	for _, b := range bindings {
		if b.Owner != owner {
			return httpx.New(http.StatusForbidden, "FORBIDDEN", "Runner id "+jsonQuote(id)+" is named by entity type "+
				jsonQuote(b.Type)+" for another principal; choose another id")
		}
	}
	return nil
}
