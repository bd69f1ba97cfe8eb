package entityapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/webhooksrc"
)

// deliverWebhook is POST /_electric/webhook-deliveries/:endpointKey[/<bucket path>]:
// what an outside service (GitHub, a Standard Webhooks sender) calls. The signature is
// the credential: no principal is asked for. In order: the source must be active (404),
// the body within the size limit (413, before it is read when Content-Length says so),
// the signature must verify with the source's secret (401, logged at a bounded rate),
// the bucket path must fit one of the source's buckets (404), the tenant's delivery
// budget must allow it (429 + Retry-After); then the delivery is appended once to its
// stream — a redelivery of the same id appends nothing and wakes nobody — and answered
// 200 {"key","duplicate"} only after the append committed.
func (s *handlers) deliverWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := s.webhooksServed(); err != nil {
		return err
	}
	result := "not_found"
	defer func() { metrics.WebhookSourceDeliveries.WithLabelValues(result).Inc() }()
	endpoint := api.Param(r, "endpointKey")
	bucketPath := strings.TrimSuffix(api.Param(r, "*"), "/")
	notFound := httpx.New(http.StatusNotFound, api.CodeNotFound, "No webhook source takes deliveries here")
	if !webhooksrc.ValidKey(endpoint) {
		return notFound
	}
	src, err := s.webhooks.ByEndpoint(r.Context(), endpoint)
	if errors.Is(err, webhooksrc.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	if src.Status != webhooksrc.StatusActive {
		return notFound
	}
	if len(r.URL.RawQuery) > webhooksrc.MaxQueryBytes {
		result = "bad"
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
			"The delivery URL's query must be at most "+strconv.Itoa(webhooksrc.MaxQueryBytes)+" bytes")
	}
	limit := s.webhooks.Options().MaxDeliveryBytes
	if r.ContentLength > limit {
		result = "too_large"
		return tooLarge(limit)
	}
	body, err := s.kit.ReadBodyReserved(w, r, limit)
	if err != nil {
		result = "too_large" // or a body that did not arrive in time
		return err
	}
	d, err := src.Verify(r.Header, body, time.Now())
	var bad *webhooksrc.BadDelivery
	switch {
	case errors.As(err, &bad):
		result = "bad"
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, bad.Message)
	case err != nil:
		result = "forged"
		if errors.Is(err, webhooksrc.ErrUnsigned) {
			result = "unsigned"
		}
		s.refusedDeliveries.Log(s.log, zap.WarnLevel, "webhook delivery refused: signature",
			zap.String("webhook_key", src.WebhookKey), zap.String("remote", r.RemoteAddr), zap.Error(err))
		return httpx.New(http.StatusUnauthorized, api.CodeUnauthorized, "The delivery's signature does not verify")
	}
	// the bucket path after the signature: a sender without the secret learns nothing of
	// the source's buckets
	bucket, ok := src.DeliveryBucket(bucketPath)
	if !ok {
		return notFound
	}
	if ok, wait := s.webhooks.Admit(src, int64(len(body))); !ok {
		result = "rate_limited"
		e := httpx.New(http.StatusTooManyRequests, CodeRateLimited, "The webhook source's owner has spent its delivery budget")
		e.RetryAfter = strconv.Itoa(int(wait/time.Second) + 1)
		return e
	}
	dup, err := s.webhooks.Deliver(r.Context(), src, &webhooksrc.Received{Delivery: d, Bucket: bucket, Body: body,
		Header: r.Header, Query: r.URL.Query(), ReceivedAt: time.Now()})
	if errors.As(err, &bad) {
		result = "bad"
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, bad.Message)
	}
	if err != nil {
		result = "failed"
		return webhookError(err)
	}
	result = "appended"
	if dup {
		result = "duplicate"
	}
	var o rawjson.Object
	o.String("key", d.ID).Bool("duplicate", dup)
	writeRawJSON(w, http.StatusOK, o.Bytes())
	return nil
}

func tooLarge(limit int64) error {
	return httpx.New(http.StatusRequestEntityTooLarge, httpx.CodePayloadTooLarge,
		"A webhook delivery's body is at most "+strconv.FormatInt(limit, 10)+" bytes (ENTITYD_WEBHOOK_DELIVERY_MAX_BYTES)")
}
