package dssub

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/textpolicy"
)

// ControlPrefix is where the control routes are served (the protocol's reserved
// prefix); AliasControlPrefix serves the same routes under the /v1/stream alias.
const (
	ControlPrefix      = "/__ds/"
	AliasControlPrefix = "/v1/stream/__ds/"
)

// Error codes of the subscription APIs (the reference server's).
const (
	codeInvalidRequest = "INVALID_REQUEST"
	codeNotFound       = "SUBSCRIPTION_NOT_FOUND"
	codeAlreadyExists  = "SUBSCRIPTION_ALREADY_EXISTS"
	codeURLRejected    = "WEBHOOK_URL_REJECTED"
	codeTokenInvalid   = "TOKEN_INVALID"
	codeFenced         = "FENCED"
	codeAlreadyClaimed = "ALREADY_CLAIMED"
	codeNoPendingWork  = "NO_PENDING_WORK"
	codeInvalidOffset  = "INVALID_OFFSET"
)

const (
	defaultLeaseTTL = 30_000
	minLeaseTTL     = 1_000
	maxLeaseTTL     = 600_000
	maxBodyBytes    = 1 << 20
	maxIDBytes      = 256
	maxStreamsPer   = 1000 // explicit streams in one request
)

// Routes registers the control routes under ControlPrefix (mounted by the api package,
// which answers failures as every route does: 503 while the database is away, nothing
// for a client that left, a logged 500 otherwise):
//
//	GET    jwks.json
//	PUT    subscriptions/:id            create (201) or confirm (200)
//	GET    subscriptions/:id
//	DELETE subscriptions/:id
//	POST   subscriptions/:id/streams    link streams explicitly
//	DELETE subscriptions/:id/streams/:path
//	POST   subscriptions/:id/callback   webhook acks (Bearer callback token)
//	POST   subscriptions/:id/claim|ack|release   pull-wake leases
func (s *Service) Routes(r chi.Router, wrap func(httpx.HandlerFunc) http.HandlerFunc) {
	r.Use(s.requireStarted)
	r.Method(http.MethodGet, "/jwks.json", wrap(s.jwks))
	r.Method(http.MethodHead, "/jwks.json", wrap(s.jwks))
	r.Route("/subscriptions/{id}", func(r chi.Router) {
		r.Put("/", wrap(s.withID(s.putSubscription)))
		r.Get("/", wrap(s.withID(s.getSubscription)))
		r.Delete("/", wrap(s.withID(s.deleteSubscription)))
		r.Post("/streams", wrap(s.withID(s.addStreams)))
		r.Delete("/streams/*", wrap(s.withID(s.removeStreamRoute)))
		r.Post("/callback", wrap(s.withID(func(w http.ResponseWriter, r *http.Request, id string) error {
			return s.acknowledge(w, r, id, false)
		})))
		r.Post("/ack", wrap(s.withID(func(w http.ResponseWriter, r *http.Request, id string) error {
			return s.acknowledge(w, r, id, true)
		})))
		r.Post("/claim", wrap(s.withID(s.claim)))
		r.Post("/release", wrap(s.withID(s.release)))
	})
}

// requireStarted answers 503 until the service runs (its keys and matcher are loaded).
func (s *Service) requireStarted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.started.Load() {
			w.Header().Set("Retry-After", "1")
			httpx.WriteError(w, httpx.New(http.StatusServiceUnavailable, codeUnavailable, "Subscriptions are not running"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Service) jwks(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(s.keys.Load().jwks)
	}
	return nil
}

// withID hands a handler the subscription id of the route (percent-decoded; chi routes
// on the raw path), or answers 404 for one that cannot be an id.
func (s *Service) withID(h func(w http.ResponseWriter, r *http.Request, id string) error) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := url.PathUnescape(chi.URLParam(r, "id"))
		if err != nil || !validID(id) {
			return fail(http.StatusNotFound, codeNotFound, "Durable Streams control route not found")
		}
		return h(w, r, id)
	}
}

func (s *Service) removeStreamRoute(w http.ResponseWriter, r *http.Request, id string) error {
	path, err := url.PathUnescape(chi.URLParam(r, "*"))
	if err != nil {
		return fail(http.StatusBadRequest, codeInvalidRequest, "Malformed stream path")
	}
	return s.removeStream(w, r, id, normalizePath(path))
}

// fail is an answer other than success.
func fail(status int, code, message string) *httpx.Error { return httpx.New(status, code, message) }

func validID(id string) bool {
	if id == "" || len(id) > maxIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] == 0x7f || id[i] == '/' {
			return false
		}
	}
	return true
}

// readJSON decodes the body (empty means {}) into v.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return httpx.ReadControlJSON(w, r, v, maxBodyBytes)
}

// controlBase is the URL the control routes were reached under, without the trailing
// "/__ds/": the origin, plus "/v1/stream" when the client used the alias. The URLs the
// server hands out (JWKS, callbacks) follow the client's choice.
func (s *Service) controlBase(r *http.Request) string {
	base := s.baseURL(r)
	if strings.HasPrefix(r.URL.Path, AliasControlPrefix) {
		base += strings.TrimSuffix(AliasControlPrefix, ControlPrefix)
	}
	return base
}

// baseURL is the origin clients reach this server at.
func (s *Service) baseURL(r *http.Request) string {
	if s.opts.PublicURL != "" {
		return s.opts.PublicURL
	}
	return httpx.RequestOrigin(r)
}

// createInput is a validated PUT body.
type createInput struct {
	Type        string   `json:"type"`
	Pattern     string   `json:"pattern,omitempty"`
	Streams     []string `json:"streams"`
	WebhookURL  string   `json:"webhook_url,omitempty"`
	WakeStream  string   `json:"wake_stream,omitempty"`
	LeaseTTLms  int64    `json:"lease_ttl_ms"`
	Description *string  `json:"description,omitempty"`
}

func (c *createInput) hash() []byte {
	canonical, _ := json.Marshal(c) // fields in a fixed order, streams sorted
	sum := sha256.Sum256(canonical)
	return sum[:]
}

func parseCreate(body map[string]any) (*createInput, error) {
	bad := func(msg string) error { return fail(http.StatusBadRequest, codeInvalidRequest, msg) }
	in := &createInput{Streams: []string{}}
	switch t := body["type"]; t {
	case typeWebhook, typePullWake:
		in.Type = t.(string)
	default:
		return nil, bad(`type must be "webhook" or "pull-wake"`)
	}
	if p, ok := body["pattern"]; ok && p != nil {
		ps, ok := p.(string)
		if !ok {
			return nil, bad("pattern must be a string")
		}
		if ps = normalizePath(ps); ps != "" {
			if _, err := compileGlob(ps); err != nil {
				return nil, bad(err.Error())
			}
			if p := textpolicy.CheckPath("/"+ps, maxPatternBytes+1); p != "" {
				return nil, bad("pattern " + p)
			}
			if reservedPath(ps) {
				return nil, bad("pattern must not address the reserved __ds prefix")
			}
			in.Pattern = ps
		}
	}
	if v, ok := body["streams"]; ok && v != nil {
		list, ok := v.([]any)
		if !ok {
			return nil, bad("streams must be an array of stream paths")
		}
		paths, err := streamList(list)
		if err != nil {
			return nil, err
		}
		in.Streams = paths
	}
	if in.Pattern == "" && len(in.Streams) == 0 {
		return nil, bad("At least one of pattern or streams is required")
	}
	in.LeaseTTLms = defaultLeaseTTL
	if v, ok := body["lease_ttl_ms"]; ok && v != nil {
		n, isNum := v.(json.Number)
		i, err := n.Int64()
		if !isNum || err != nil || i < minLeaseTTL || i > maxLeaseTTL {
			return nil, bad("lease_ttl_ms must be an integer from 1000 to 600000")
		}
		in.LeaseTTLms = i
	}
	if d, ok := body["description"]; ok && d != nil {
		ds, ok := d.(string)
		if !ok || len(ds) > 4096 {
			return nil, bad("description must be a string of at most 4096 bytes")
		}
		in.Description = &ds
	}
	switch in.Type {
	case typeWebhook:
		hook, _ := body["webhook"].(map[string]any)
		u, _ := hook["url"].(string)
		if u == "" {
			return nil, bad("webhook subscriptions require webhook.url")
		}
		if len(u) > 2048 {
			return nil, bad("webhook.url must be at most 2048 bytes")
		}
		in.WebhookURL = u
	case typePullWake:
		ws, _ := body["wake_stream"].(string)
		ws = normalizePath(ws)
		if ws == "" {
			return nil, bad("pull-wake subscriptions require wake_stream")
		}
		if !validStreamPath(ws) {
			return nil, bad("wake_stream is not a valid stream path")
		}
		if contains(in.Streams, ws) {
			return nil, bad("a subscription cannot follow its own wake_stream")
		}
		in.WakeStream = ws
	}
	return in, nil
}

// streamList validates and normalizes explicit stream paths (sorted, without duplicates).
func streamList(list []any) ([]string, error) {
	if len(list) > maxStreamsPer {
		return nil, fail(http.StatusBadRequest, codeInvalidRequest, "at most 1000 streams per request")
	}
	seen := map[string]bool{}
	out := []string{}
	for _, v := range list {
		p, ok := v.(string)
		if !ok {
			return nil, fail(http.StatusBadRequest, codeInvalidRequest, "streams must contain only strings")
		}
		p = normalizePath(p)
		if !validStreamPath(p) {
			return nil, fail(http.StatusBadRequest, codeInvalidRequest, "streams must be non-empty stream paths outside __ds")
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// subscriptionJSON is a subscription as the API shows it. It never carries a secret.
type subscriptionJSON struct {
	ID             string       `json:"id"`
	SubscriptionID string       `json:"subscription_id"`
	Type           string       `json:"type"`
	Pattern        string       `json:"pattern,omitempty"`
	Streams        []streamInfo `json:"streams"`
	Webhook        *webhookJSON `json:"webhook,omitempty"`
	WakeStream     string       `json:"wake_stream,omitempty"`
	LeaseTTLms     int64        `json:"lease_ttl_ms"`
	CreatedAt      string       `json:"created_at"`
	Status         string       `json:"status"`
	Description    *string      `json:"description,omitempty"`
	Generation     int64        `json:"generation"`
}

type webhookJSON struct {
	URL     string      `json:"url"`
	Signing signingJSON `json:"signing"`
}

type signingJSON struct {
	Alg     string `json:"alg"`
	Kid     string `json:"kid"`
	JWKSURL string `json:"jwks_url"`
}

func (s *Service) present(r *http.Request, sb *sub, links []*link) subscriptionJSON {
	out := subscriptionJSON{
		ID: sb.ID, SubscriptionID: sb.ID, Type: sb.Type, Pattern: sb.Pattern, Streams: infos(links),
		WakeStream: sb.WakeStream, LeaseTTLms: sb.LeaseTTLms,
		CreatedAt: sb.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"), Status: sb.Status,
		Generation: sb.Generation,
	}
	if sb.Description != "" {
		d := sb.Description
		out.Description = &d
	}
	if sb.Type == typeWebhook {
		out.Webhook = &webhookJSON{URL: sb.WebhookURL, Signing: signingJSON{
			Alg: "ed25519", Kid: s.keys.Load().signKID, JWKSURL: s.controlBase(r) + ControlPrefix + "jwks.json"}}
	}
	return out
}

func (s *Service) putSubscription(w http.ResponseWriter, r *http.Request, id string) error {
	var body map[string]any
	if err := readJSON(w, r, &body); err != nil {
		return err
	}
	if body == nil {
		return fail(http.StatusBadRequest, codeInvalidRequest, "Request body must be a JSON object")
	}
	in, err := parseCreate(body)
	if err != nil {
		return err
	}
	who, _ := principal.FromContext(r.Context())
	sb, links, created, err := s.create(r.Context(), id, in, s.controlBase(r), who)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpx.WriteJSON(w, status, s.present(r, sb, links))
	return nil
}

func (s *Service) getSubscription(w http.ResponseWriter, r *http.Request, id string) error {
	sb, links, err := s.get(r.Context(), id)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, s.present(r, sb, links))
	return nil
}

func (s *Service) deleteSubscription(w http.ResponseWriter, r *http.Request, id string) error {
	if err := s.delete(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Service) addStreams(w http.ResponseWriter, r *http.Request, id string) error {
	var body struct {
		Streams []any `json:"streams"`
	}
	if err := readJSON(w, r, &body); err != nil {
		return err
	}
	if len(body.Streams) == 0 {
		return fail(http.StatusBadRequest, codeInvalidRequest, "streams must be a non-empty array of stream paths")
	}
	paths, err := streamList(body.Streams)
	if err != nil {
		return err
	}
	if err := s.follow(r.Context(), id, paths); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Service) removeStream(w http.ResponseWriter, r *http.Request, id, path string) error {
	if err := s.unfollow(r.Context(), id, path); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// acknowledge is POST callback (webhook) and POST ack (pull-wake).
func (s *Service) acknowledge(w http.ResponseWriter, r *http.Request, id string, pull bool) error {
	var req ackRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	nextWake, err := s.ack(r.Context(), id, httpx.Bearer(r), &req, pull)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "next_wake": nextWake})
	return nil
}

func (s *Service) claim(w http.ResponseWriter, r *http.Request, id string) error {
	var body struct {
		Worker any `json:"worker"`
	}
	if err := readJSON(w, r, &body); err != nil {
		return err
	}
	worker, _ := body.Worker.(string)
	if worker == "" || len(worker) > maxIDBytes || !textpolicy.Valid(worker, textpolicy.Name) {
		return fail(http.StatusBadRequest, codeInvalidRequest, "worker must be a non-empty string of at most 256 bytes without control characters")
	}
	c, err := s.claimWake(r.Context(), id, worker)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{
		"wake_id":      c.WakeID,
		"generation":   c.Generation,
		"token":        c.Token,
		"streams":      c.Streams,
		"lease_ttl_ms": c.LeaseTTLms,
	})
	return nil
}

func (s *Service) release(w http.ResponseWriter, r *http.Request, id string) error {
	var req ackRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	if err := s.releaseWake(r.Context(), id, httpx.Bearer(r), &req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
