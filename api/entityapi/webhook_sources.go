package entityapi

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/webhooksrc"
)

// Bounds of a source's definition beyond the body size and webhooksrc's.
const (
	minSecretBytes = 16
	maxSecretBytes = 256
	// maxListedSources bounds GET /_electric/webhook-sources (the per-principal quota
	// bounds a principal's own; public ones are everyone's).
	maxListedSources = 1000
)

// listWebhookSources is GET /_electric/webhook-sources → {"webhookSources":[...]}: the
// active, agent-visible sources the caller may read (webhooksrc.Readable: its own and
// the public ones), as Electric's runtime lists them for its tools. No secret is ever
// part of them.
func (s *handlers) listWebhookSources(w http.ResponseWriter, r *http.Request) error {
	if s.webhooks == nil {
		writeRawJSON(w, http.StatusOK, []byte(`{"webhookSources":[]}`))
		return nil
	}
	p := api.Caller(r)
	srcs, err := s.webhooks.Visible(r.Context(), p, s.checker.Privileged(p), maxListedSources)
	if err != nil {
		return err
	}
	out := make([]json.RawMessage, 0, len(srcs))
	for _, src := range srcs {
		out = append(out, src.Contract())
	}
	b, _ := json.Marshal(out)
	var o rawjson.Object
	o.Raw("webhookSources", b)
	writeRawJSON(w, http.StatusOK, o.Bytes())
	return nil
}

// createWebhookSource is POST /_electric/webhook-sources (entityd's; the reference takes
// its catalog from the hosting product): {webhookKey, endpointKey?, label?,
// description?, scheme, secret?, public?, agentVisible?, buckets?} → 201
// {webhookSource, deliveryUrl, secret?}. The caller owns the source; a secret the server
// generated is answered here once and never again.
func (s *handlers) createWebhookSource(w http.ResponseWriter, r *http.Request) error {
	if err := s.webhooksServed(); err != nil {
		return err
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	b.Only("webhookKey", "endpointKey", "label", "description", "scheme", "secret", "public", "agentVisible", "buckets")
	src := &webhooksrc.Source{Owner: api.Caller(r).String(), Status: webhooksrc.StatusActive, AgentVisible: true, Revision: 1}
	src.WebhookKey = key(b, "webhookKey", true)
	src.EndpointKey = key(b, "endpointKey", false)
	if src.EndpointKey == "" {
		src.EndpointKey = src.WebhookKey
	}
	src.Label, _ = b.Text("label")
	b.MaxLen("label", src.Label, webhooksrc.MaxLabelBytes)
	if src.Label == "" {
		src.Label = src.WebhookKey
	}
	src.Description, _ = b.Text("description")
	b.MaxLen("description", src.Description, webhooksrc.MaxDescriptionBytes)
	src.Scheme, _ = b.Enum("scheme", webhooksrc.SchemeGitHub, webhooksrc.SchemeStandard)
	if !b.Has("scheme") {
		b.Details.Add("/scheme", "must have required property 'scheme'")
	}
	secret, given := b.Str("secret")
	if given && (len(secret) < minSecretBytes || len(secret) > maxSecretBytes) {
		b.Details.Add("/secret", "must be "+strconv.Itoa(minSecretBytes)+"-"+strconv.Itoa(maxSecretBytes)+" bytes")
	}
	src.Public = boolean(b, "public", false)
	src.AgentVisible = boolean(b, "agentVisible", true)
	buckets, d := webhooksrc.ParseBuckets(b.Raw("buckets"))
	b.Details = append(b.Details, d...)
	src.Buckets = buckets
	if err := b.Fail(); err != nil {
		return err
	}
	if !given {
		secret = newSecret(src.Scheme)
	}
	src.Secret = []byte(secret)
	if err := s.quotas.webhookSource(r.Context(), api.Caller(r)); err != nil {
		return err
	}
	if err := s.webhooks.Create(r.Context(), src); errors.Is(err, webhooksrc.ErrExists) {
		return httpx.New(http.StatusConflict, CodeWebhookSourceExists, "A webhook source with this webhookKey or endpointKey exists")
	} else if err != nil {
		return err
	}
	got, err := s.webhooks.Get(r.Context(), src.WebhookKey)
	if err != nil {
		return err
	}
	var o rawjson.Object
	o.Raw("webhookSource", got.Contract()).String("deliveryUrl", deliveryPath(got))
	if !given {
		o.String("secret", secret)
	}
	writeRawJSON(w, http.StatusCreated, o.Bytes())
	return nil
}

// getWebhookSource is GET /_electric/webhook-sources/:webhookKey → {webhookSource,
// deliveryUrl}, for whoever may read it (any status); 404 otherwise, as for a key that
// does not exist. Never the secret.
func (s *handlers) getWebhookSource(w http.ResponseWriter, r *http.Request) error {
	src, err := s.readableSource(r, api.Param(r, "webhookKey"))
	if err != nil {
		return err
	}
	var o rawjson.Object
	o.Raw("webhookSource", src.Contract()).String("deliveryUrl", deliveryPath(src))
	writeRawJSON(w, http.StatusOK, o.Bytes())
	return nil
}

// revokeWebhookSource is DELETE /_electric/webhook-sources/:webhookKey: the owner (or a
// privileged principal) revokes the source. Its deliveries and new subscriptions are
// refused and its secret forgotten; its keys stay taken, so its streams (kept for what
// they hold) never change hands. → {"status":"revoked"}.
func (s *handlers) revokeWebhookSource(w http.ResponseWriter, r *http.Request) error {
	src, err := s.readableSource(r, api.Param(r, "webhookKey"))
	if err != nil {
		return err
	}
	p := api.Caller(r)
	if src.Owner != p.String() && !s.checker.Privileged(p) {
		return httpx.New(http.StatusForbidden, api.CodeForbidden, "Only the webhook source's owner may revoke it")
	}
	if err := s.webhooks.SetStatus(r.Context(), src.WebhookKey, webhooksrc.StatusRevoked); errors.Is(err, webhooksrc.ErrNotFound) {
		return httpx.New(http.StatusNotFound, api.CodeNotFound, "Webhook source \""+src.WebhookKey+"\" is revoked already")
	} else if err != nil {
		return err
	}
	writeRawJSON(w, http.StatusOK, []byte(`{"status":"revoked"}`))
	return nil
}

// readableSource is the source of key if the caller may read it (404 otherwise: another
// principal's private source is answered as if it did not exist).
func (s *handlers) readableSource(r *http.Request, key string) (*webhooksrc.Source, error) {
	if err := s.webhooksServed(); err != nil {
		return nil, err
	}
	notFound := httpx.New(http.StatusNotFound, api.CodeNotFound, "Webhook source \""+key+"\" not found")
	if !webhooksrc.ValidKey(key) {
		return nil, notFound
	}
	src, err := s.webhooks.Get(r.Context(), key)
	if errors.Is(err, webhooksrc.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	if !s.mayRead(api.Caller(r), src) {
		return nil, notFound
	}
	src.Secret = nil
	return src, nil
}

func (s *handlers) mayRead(p principal.Principal, src *webhooksrc.Source) bool {
	return webhooksrc.Readable(src.Access(), p, s.checker.Privileged(p))
}

func (s *handlers) webhooksServed() error {
	if s.webhooks == nil {
		return httpx.New(http.StatusServiceUnavailable, api.CodeServiceUnavailable, "Webhook sources are not served by this server")
	}
	return nil
}

// deliveryPath is where outside services POST a source's deliveries (bucket paths
// appended below it).
func deliveryPath(src *webhooksrc.Source) string {
	return "/_electric/webhook-deliveries/" + src.EndpointKey
}

func key(b *jsonbody.Body, name string, required bool) string {
	v, ok := b.Str(name)
	if !ok {
		if required && !b.Has(name) {
			b.Details.Add("/"+name, "must have required property '"+name+"'")
		}
		return ""
	}
	if !webhooksrc.ValidKey(v) {
		b.Details.Add("/"+name, "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
		return ""
	}
	return v
}

func boolean(b *jsonbody.Body, name string, def bool) bool {
	raw := b.Raw(name)
	if raw == nil {
		return def
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil || jsonbody.Kind(raw) == 'n' {
		b.Details.Add("/"+name, "must be boolean")
		return def
	}
	return v
}

// newSecret is a random secret in the scheme's usual form.
func newSecret(scheme string) string {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	if scheme == webhooksrc.SchemeStandard {
		return "whsec_" + base64.StdEncoding.EncodeToString(k)
	}
	return hex.EncodeToString(k)
}
