package entityapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/internal/validation"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wakereg"
	"github.com/entityd/entityd/webhooksrc"
	"github.com/entityd/entityd/wire"
)

// Bounds of a subscription beyond the body size.
const (
	maxSubscriptionIDBytes = 200 // the manifest key "webhook-source:<id>" stays within wakereg's
	maxReasonBytes         = 1024
)

// webhookWake is what a subscription waits for: a webhook_event inserted in its stream.
var webhookWake = wakereg.Condition{Collections: []string{webhooksrc.EventType}, Ops: []string{"insert"}}

// putWebhookSourceSubscription is PUT /_electric/entities/:type/:id/webhook-source-
// subscriptions/:sid {webhookKey, bucketKey?, params?, filterKey?, lifetime?, reason?}
// → {txid, subscription}: the entity (write permission) is woken by each new delivery
// to the source (or its bucket). The manifest entry Electric's runtime reads the wake by
// and the wake registration commit together. The caller must be able to read the source
// (another principal's private source is answered 404, as an unknown one).
func (s *handlers) putWebhookSourceSubscription(w http.ResponseWriter, r *http.Request) error {
	e, id, err := s.subscriptionTarget(r)
	if err != nil {
		return err
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	b.Only("webhookKey", "bucketKey", "params", "filterKey", "lifetime", "reason")
	webhookKey, ok := b.Str("webhookKey")
	if !ok && !b.Has("webhookKey") {
		b.Details.Add("/webhookKey", "must have required property 'webhookKey'")
	}
	b.MaxLen("webhookKey", webhookKey, 63)
	bucketKey, _ := b.Str("bucketKey")
	b.MaxLen("bucketKey", bucketKey, 63)
	filterKey, _ := b.Str("filterKey")
	b.MaxLen("filterKey", filterKey, 63)
	params := b.Object("params")
	b.MaxLen("params", string(params), webhooksrc.MaxParamsBytes)
	if params != nil {
		b.Details = append(b.Details, textpolicy.CheckJSON(params, "/params", textpolicy.Text)...)
	}
	lifetime := lifetimeMember(b.Raw("lifetime"), &b.Details)
	reason, _ := b.Text("reason")
	b.MaxLen("reason", reason, maxReasonBytes)
	if err := b.Fail(); err != nil {
		return err
	}
	src, err := s.readableSource(r, webhookKey)
	if err != nil {
		return err
	}
	invalid := func(msg string) error { return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, msg) }
	if src.Status != webhooksrc.StatusActive || !src.AgentVisible {
		return invalid("Webhook source \"" + src.WebhookKey + "\" is not active")
	}
	var bucket *webhooksrc.Bucket
	if bucketKey != "" {
		if bucket = src.Bucket(bucketKey); bucket == nil {
			return invalid("Unknown bucket \"" + bucketKey + "\" for webhook source \"" + src.WebhookKey + "\"")
		}
	}
	if filterKey != "" && !hasFilter(bucket, filterKey) {
		return invalid("Unknown filter \"" + filterKey + "\" for webhook source \"" + src.WebhookKey + "\"")
	}
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	bucketPath := ""
	if bucket != nil {
		if bucketPath, err = bucket.Render(s.webhooks.Schemas(), params); err != nil {
			return invalid(err.Error())
		}
	}
	if err := s.quotas.wakes(r.Context(), api.Caller(r)); err != nil {
		return err
	}
	streamPath, err := s.webhooks.EnsureStream(r.Context(), src, bucketPath)
	if err != nil {
		return webhookError(err)
	}
	manifestKey := "webhook-source:" + id
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	var sub rawjson.Object
	sub.String("id", id).String("entityUrl", e.URL).String("webhookKey", src.WebhookKey)
	if bucketKey != "" {
		sub.String("bucketKey", bucketKey)
	}
	sub.Raw("params", params)
	if filterKey != "" {
		sub.String("filterKey", filterKey)
	}
	// filters are recorded, not applied (as in the reference): every delivery wakes
	sub.Bool("filterApplied", false).Int("contractRevision", int64(src.Revision)).String("sourceUrl", streamPath).
		String("sourceType", "webhook").String("manifestKey", manifestKey).Raw("lifetime", lifetime)
	if reason != "" {
		sub.String("reason", reason)
	}
	sub.String("createdBy", "tool").String("createdAt", now)
	subscription := sub.Bytes()
	entry := manifestEntry(src, manifestKey, streamPath, bucketPath, subscription)

	reg := wakereg.ManifestEntry{Key: manifestKey, Wake: &wakereg.Spec{SubscriberURL: e.URL, SourceURL: streamPath,
		Condition: webhookWake, IncludeResponse: true, ManifestKey: manifestKey}}
	txid, err := s.writeManifest(r.Context(), e, manifestKey, wire.OpUpsert, entry,
		wakereg.ManifestStatements(e.URL, api.Caller(r).String(), []wakereg.ManifestEntry{reg}))
	if err != nil {
		return err
	}
	s.wakes.Noted(context.WithoutCancel(r.Context()), streamPath)
	var o rawjson.Object
	o.String("txid", txid).Raw("subscription", subscription)
	writeRawJSON(w, http.StatusOK, o.Bytes())
	return nil
}

// deleteWebhookSourceSubscription is DELETE …/webhook-source-subscriptions/:sid →
// {txid}: the manifest entry is deleted and its wake registration with it.
func (s *handlers) deleteWebhookSourceSubscription(w http.ResponseWriter, r *http.Request) error {
	e, id, err := s.subscriptionTarget(r)
	if err != nil {
		return err
	}
	key := "webhook-source:" + id
	txid, err := s.writeManifest(r.Context(), e, key, wire.OpDelete, nil,
		wakereg.ManifestStatements(e.URL, api.Caller(r).String(), []wakereg.ManifestEntry{{Key: key}}))
	if err != nil {
		return err
	}
	return writeTxid(w, txid)
}

func (s *handlers) subscriptionTarget(r *http.Request) (*entity.Entity, string, error) {
	if err := refusePrincipalEntity(r, "subscribed to webhook sources"); err != nil {
		return nil, "", err
	}
	if err := s.webhooksServed(); err != nil {
		return nil, "", err
	}
	if s.wakes == nil {
		return nil, "", httpx.New(http.StatusServiceUnavailable, api.CodeServiceUnavailable, "Wakes are not served by this server")
	}
	if api.Param(r, "type") == "principal" {
		return nil, "", httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Principal entities cannot be subscribed to webhook sources")
	}
	e, err := s.entityAt(r)
	if err != nil {
		return nil, "", err
	}
	id := api.Param(r, "sid")
	if id == "" || len(id) > maxSubscriptionIDBytes || !textpolicy.Valid(id, textpolicy.Name) {
		return nil, "", httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
			"Subscription ids must be 1-"+strconv.Itoa(maxSubscriptionIDBytes)+" bytes of UTF-8 without control characters")
	}
	return e, id, nil
}

// writeManifest appends a manifest event to the entity's stream with the statements
// that change its wake registrations, in one transaction.
func (s *handlers) writeManifest(ctx context.Context, e *entity.Entity, key, op string, value []byte, also []streamdb.Statement) (string, error) {
	txid := uuid.NewString()
	ev := wire.Event{Type: inbox.ManifestEventType, Key: key, Value: value, Operation: op, Txid: txid,
		Timestamp: time.Now().UTC()}.Marshal()
	_, err := s.streams.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Main(e.URL), Messages: [][]byte{ev}, Also: also})
	var closed *streamdb.ClosedError
	if errors.As(err, &closed) || errors.Is(err, streamdb.ErrGone) {
		return "", httpx.New(http.StatusConflict, api.CodeNotRunning, "Entity is not accepting writes")
	}
	return txid, err
}

// manifestEntry is the manifest entry of a subscription, in the shape Electric's runtime
// finds a webhook wake's subscription by (config.streamUrl, config.webhookSource).
func manifestEntry(src *webhooksrc.Source, key, streamPath, bucketPath string, subscription []byte) []byte {
	ref := src.EndpointKey
	if bucketPath != "" {
		ref += "/" + bucketPath
	}
	var config rawjson.Object
	config.String("endpointKey", src.EndpointKey).String("streamUrl", streamPath)
	if bucketPath != "" {
		config.String("bucket", bucketPath)
	}
	config.Raw("webhookSource", subscription)
	var o rawjson.Object
	o.String("key", key).String("kind", "source").String("sourceType", "webhook").String("sourceRef", ref).
		Raw("config", config.Bytes()).Raw("wake", []byte(`{"on":"change","collections":["webhook_event"],"ops":["insert"]}`))
	return o.Bytes()
}

func hasFilter(b *webhooksrc.Bucket, key string) bool {
	if b == nil {
		return false
	}
	for _, f := range b.Filters {
		var k struct {
			Key string `json:"key"`
		}
		if json.Unmarshal(f, &k) == nil && k.Key == key {
			return true
		}
	}
	return false
}

// lifetimeMember checks a subscription's lifetime ({kind:"until_entity_stopped"},
// {kind:"expires_at", at}, {kind:"manual"}; the first when absent). Every kind ends
// when the entity stops; expires_at is recorded, not enforced (as in the reference).
func lifetimeMember(raw json.RawMessage, d *validationDetails) json.RawMessage {
	if raw == nil {
		return json.RawMessage(`{"kind":"until_entity_stopped"}`)
	}
	var l struct {
		Kind string  `json:"kind"`
		At   *string `json:"at"`
	}
	dec := json.NewDecoder(bytesReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		d.Add("/lifetime", `must be {kind:"until_entity_stopped"}, {kind:"expires_at", at} or {kind:"manual"}`)
		return nil
	}
	var o rawjson.Object
	switch l.Kind {
	case "until_entity_stopped", "manual":
		if l.At != nil {
			d.Add("/lifetime/at", "must not be present for kind "+l.Kind)
			return nil
		}
		o.String("kind", l.Kind)
	case "expires_at":
		if l.At == nil {
			d.Add("/lifetime/at", "must have required property 'at'")
			return nil
		}
		if _, err := time.Parse(time.RFC3339Nano, *l.At); err != nil || len(*l.At) > 64 {
			d.Add("/lifetime/at", "Invalid expires_at lifetime timestamp")
			return nil
		}
		o.String("kind", l.Kind).String("at", *l.At)
	default:
		d.Add("/lifetime/kind", "must be until_entity_stopped, expires_at or manual")
		return nil
	}
	return o.Bytes()
}

type validationDetails = validation.Details

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// webhookError answers the webhook sources' own errors.
func webhookError(err error) error {
	if errors.Is(err, webhooksrc.ErrTooManyBuckets) {
		e := httpx.New(http.StatusTooManyRequests, quota.CodeExceeded,
			"The webhook source has the most bucket streams allowed")
		e.RetryAfter = quota.RetryAfter
		return e
	}
	return err
}
