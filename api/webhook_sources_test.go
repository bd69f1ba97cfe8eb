package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/webhooksrc"
)

const (
	hookSecret   = "s3cret-of-sixteen-bytes"
	sourcesPath  = "/_electric/webhook-sources"
	deliveryPath = "/_electric/webhook-deliveries/"
	asPrincipal  = "Electric-Principal"
)

// githubSignature is GitHub's X-Hub-Signature-256 of body under secret.
func githubSignature(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// ghDeliver POSTs a GitHub delivery of body with id, signed with secret ("" unsigned).
func (h *harness) ghDeliver(endpoint, id, secret, body string, extra ...string) *response {
	h.t.Helper()
	headers := []string{"X-GitHub-Delivery", id, "X-GitHub-Event", "push", "User-Agent", "GitHub-Hookshot/abc"}
	if secret != "" {
		headers = append(headers, "X-Hub-Signature-256", githubSignature(secret, body))
	}
	return h.do(http.MethodPost, deliveryPath+endpoint, body, append(headers, extra...)...)
}

// webhookEvents reads a source's stream.
func (h *harness) webhookEvents(path string, as string) []event {
	h.t.Helper()
	r := h.do(http.MethodGet, path+"?offset=-1", nil, asPrincipal, as)
	requireStatus(h.t, r, http.StatusOK)
	return parseEvents(h.t, r.Body)
}

// wakesFor are the wake events of an entity whose changes name webhook events.
func wakesFor(h *harness, url string) []event {
	var out []event
	for _, e := range ofType(h.events(url), "wake") {
		if strings.Contains(string(e.Value["changes"]), `"webhook_event"`) {
			out = append(out, e)
		}
	}
	return out
}

func webhookSetup(t *testing.T) *harness {
	h := setup(t, testserverQuiet())
	requireStatus(t, h.do(http.MethodPost, typesPath, `{"name":"bot","description":"d"}`, asPrincipal, "user:alice"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPost, typesPath+"/bot/grants",
		`{"subject_kind":"principal","subject_value":"user:bob","permission":"spawn"}`, asPrincipal, "user:alice"), http.StatusCreated)
	return h
}

// TestWebhookSourceDeliveryWakesOnce: a signed GitHub delivery appends one webhook_event
// to the source's stream and wakes the subscribed entity once, with the change Electric's
// runtime hydrates; a redelivery of the same id appends and wakes nothing; a forged one
// is refused 401 and appends nothing; after unsubscribing, deliveries wake nobody.
func TestWebhookSourceDeliveryWakesOnce(t *testing.T) {
	h := webhookSetup(t)
	r := h.do(http.MethodPost, sourcesPath, map[string]any{"webhookKey": "gh", "label": "GitHub", "scheme": "github",
		"secret": hookSecret}, asPrincipal, "user:alice")
	requireStatus(t, r, http.StatusCreated)
	require.NotContains(t, string(r.Body), hookSecret, "a secret the caller gave is not answered")
	require.Equal(t, "/_electric/webhook-deliveries/gh", str(t, r.object(t)["deliveryUrl"]))
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/bot/a", `{}`, asPrincipal, "user:alice"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/bot/marker", `{}`, asPrincipal, "user:alice"), http.StatusCreated)

	// the list is Electric's contract, without the secret
	r = h.do(http.MethodGet, sourcesPath, nil, asPrincipal, "user:alice")
	requireStatus(t, r, http.StatusOK)
	var list struct {
		WebhookSources []map[string]json.RawMessage `json:"webhookSources"`
	}
	r.decode(t, &list)
	require.Len(t, list.WebhookSources, 1)
	src := list.WebhookSources[0]
	require.Equal(t, "gh", str(t, src["webhookKey"]))
	require.Equal(t, "webhook", str(t, src["sourceType"]))
	require.Equal(t, "gh", str(t, src["endpointKey"]))
	require.Equal(t, "active", str(t, src["status"]))
	require.Equal(t, "true", string(src["agentVisible"]))
	require.Equal(t, "[]", string(src["buckets"]))
	require.Equal(t, int64(1), integer(t, src["revision"]))
	require.NotContains(t, string(r.Body), hookSecret)
	r = h.do(http.MethodGet, sourcesPath+"/gh", nil, asPrincipal, "user:alice")
	requireStatus(t, r, http.StatusOK)
	require.NotContains(t, string(r.Body), hookSecret)

	subscribe := func(entity, sid string) *response {
		return h.do(http.MethodPut, entitiesPath+entity+"/webhook-source-subscriptions/"+sid,
			`{"webhookKey":"gh","reason":"react to pushes"}`, asPrincipal, "user:alice")
	}
	r = subscribe("/bot/a", "pushes")
	requireStatus(t, r, http.StatusOK)
	var sub struct {
		Txid         string         `json:"txid"`
		Subscription map[string]any `json:"subscription"`
	}
	r.decode(t, &sub)
	require.Regexp(t, uuidRe, sub.Txid)
	require.Equal(t, "pushes", sub.Subscription["id"])
	require.Equal(t, "/_webhooks/gh", sub.Subscription["sourceUrl"])
	require.Equal(t, "webhook-source:pushes", sub.Subscription["manifestKey"])
	require.Equal(t, map[string]any{"kind": "until_entity_stopped"}, sub.Subscription["lifetime"])
	ms := manifests(h, "/bot/a", "webhook-source:pushes")
	require.Len(t, ms, 1)
	require.Equal(t, sub.Txid, ms[0].Headers["txid"])
	require.Equal(t, "source", str(t, ms[0].Value["kind"]))
	require.Equal(t, "webhook", str(t, ms[0].Value["sourceType"]))
	var config struct {
		EndpointKey   string         `json:"endpointKey"`
		StreamURL     string         `json:"streamUrl"`
		WebhookSource map[string]any `json:"webhookSource"`
	}
	require.NoError(t, json.Unmarshal(ms[0].Value["config"], &config))
	require.Equal(t, "gh", config.EndpointKey)
	require.Equal(t, "/_webhooks/gh", config.StreamURL)
	require.Equal(t, "pushes", config.WebhookSource["id"])
	require.Equal(t, "gh", config.WebhookSource["webhookKey"])
	requireStatus(t, subscribe("/bot/marker", "m"), http.StatusOK)

	// a signed delivery: one event, one wake each
	body := `{"ref":"refs/heads/main","after":"abc123","repository":{"full_name":"o/r"}}`
	r = h.ghDeliver("gh", "d-1", hookSecret, body, "X-GitHub-Hook-ID", "77")
	requireStatus(t, r, http.StatusOK)
	require.JSONEq(t, `{"key":"d-1","duplicate":false}`, string(r.Body))
	evs := h.webhookEvents("/_webhooks/gh", "user:alice")
	require.Len(t, evs, 1)
	require.Equal(t, "webhook_event", evs[0].Type)
	require.Equal(t, "d-1", evs[0].Key)
	require.Equal(t, "insert", evs[0].Headers["operation"])
	require.JSONEq(t, body, string(evs[0].Value["body"]))
	require.Equal(t, "push", str(t, evs[0].Value["event_type"]))
	require.Equal(t, "gh", str(t, evs[0].Value["endpoint_key"]))
	require.Equal(t, "null", string(evs[0].Value["bucket"]))
	require.Equal(t, "/_webhooks/gh", str(t, evs[0].Value["stream_path"]))
	requireISOTime(t, evs[0].Value["received_at"])
	var hdrs map[string]string
	require.NoError(t, json.Unmarshal(evs[0].Value["headers"], &hdrs))
	require.Equal(t, "d-1", hdrs["x-github-delivery"])
	require.Equal(t, "77", hdrs["x-github-hook-id"])
	require.NotContains(t, hdrs, "x-hub-signature-256", "signatures are not recorded")
	var req map[string]any
	require.NoError(t, json.Unmarshal(evs[0].Value["request"], &req))
	require.Equal(t, "POST", req["method"])
	require.Equal(t, float64(len(body)), req["size_bytes"])

	testwait.Until(t, "the wakes of d-1", func() bool { return len(wakesFor(h, "/bot/a")) == 1 && len(wakesFor(h, "/bot/marker")) == 1 })
	w := wakesFor(h, "/bot/a")[0]
	require.Equal(t, "/_webhooks/gh", str(t, w.Value["source"]))
	require.Equal(t, "false", string(w.Value["timeout"]))
	require.JSONEq(t, `[{"collection":"webhook_event","kind":"insert","key":"d-1"}]`, string(w.Value["changes"]))

	// a redelivery of d-1 (GitHub's "Redeliver"): answered, nothing appended or woken;
	// a forged and an unsigned delivery: 401, nothing appended. The marker delivery d-2
	// comes after them in the source: once its wakes are there, the others were judged.
	r = h.ghDeliver("gh", "d-1", hookSecret, body)
	requireStatus(t, r, http.StatusOK)
	require.JSONEq(t, `{"key":"d-1","duplicate":true}`, string(r.Body))
	requireError(t, h.ghDeliver("gh", "d-forged", "not-the-secret-at-all", body), http.StatusUnauthorized, "UNAUTHORIZED",
		"The delivery's signature does not verify")
	requireError(t, h.ghDeliver("gh", "d-unsigned", "", body), http.StatusUnauthorized, "UNAUTHORIZED",
		"The delivery's signature does not verify")
	tampered := h.do(http.MethodPost, deliveryPath+"gh", body+" ", "X-GitHub-Delivery", "d-t", "X-Hub-Signature-256", githubSignature(hookSecret, body))
	requireStatus(t, tampered, http.StatusUnauthorized)
	requireStatus(t, h.ghDeliver("gh", "d-2", hookSecret, `{"n":2}`), http.StatusOK)
	testwait.Until(t, "the marker's wake of d-2", func() bool { return len(wakesFor(h, "/bot/marker")) == 2 })
	require.Len(t, wakesFor(h, "/bot/a"), 2, "d-1 once, d-2 once")
	evs = h.webhookEvents("/_webhooks/gh", "user:alice")
	require.Equal(t, []string{"d-1", "d-2"}, []string{evs[0].Key, evs[1].Key})
	require.Len(t, evs, 2)

	// unsubscribed: d-3 wakes the marker only
	r = h.do(http.MethodDelete, entitiesPath+"/bot/a/webhook-source-subscriptions/pushes", nil, asPrincipal, "user:alice")
	requireStatus(t, r, http.StatusOK)
	ms = manifests(h, "/bot/a", "webhook-source:pushes")
	require.Len(t, ms, 2)
	require.Equal(t, "delete", ms[1].Headers["operation"])
	requireStatus(t, h.ghDeliver("gh", "d-3", hookSecret, `{"n":3}`), http.StatusOK)
	testwait.Until(t, "the marker's wake of d-3", func() bool { return len(wakesFor(h, "/bot/marker")) == 3 })
	require.Len(t, wakesFor(h, "/bot/a"), 2, "no wake after unsubscribing")
}

// TestWebhookSourceStandardWebhooks: the Standard Webhooks scheme (webhook-id,
// webhook-timestamp, webhook-signature v1 over id.timestamp.body with the whsec_ key the
// server generated and answered once); a stale timestamp and a wrong key are refused.
func TestWebhookSourceStandardWebhooks(t *testing.T) {
	h := webhookSetup(t)
	r := h.do(http.MethodPost, sourcesPath, `{"webhookKey":"svix","scheme":"standard-webhooks"}`, asPrincipal, "user:alice")
	requireStatus(t, r, http.StatusCreated)
	secret := str(t, r.object(t)["secret"])
	require.True(t, strings.HasPrefix(secret, "whsec_"), secret)
	r = h.do(http.MethodGet, sourcesPath+"/svix", nil, asPrincipal, "user:alice")
	requireStatus(t, r, http.StatusOK)
	require.NotContains(t, string(r.Body), secret[6:], "never answered again")
	key, err := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	require.NoError(t, err)
	sign := func(k []byte, id string, ts int64, body string) string {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "." + body))
		return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	send := func(k []byte, id string, ts int64, body string) *response {
		return h.do(http.MethodPost, deliveryPath+"svix", body, "Webhook-Id", id, "Webhook-Timestamp", strconv.FormatInt(ts, 10),
			"Webhook-Signature", "v1,bm90IGl0 "+sign(k, id, ts, body))
	}
	now := time.Now().Unix()
	requireStatus(t, send(key, "msg_1", now, `{"type":"invoice.paid"}`), http.StatusOK)
	requireStatus(t, send(key, "msg_1", now, `{"type":"invoice.paid"}`), http.StatusOK)
	requireStatus(t, send([]byte("wrong key wrong key"), "msg_2", now, `{}`), http.StatusUnauthorized)
	requireStatus(t, send(key, "msg_3", now-3600, `{}`), http.StatusUnauthorized)
	evs := h.webhookEvents("/_webhooks/svix", "user:alice")
	require.Len(t, evs, 1)
	require.Equal(t, "msg_1", evs[0].Key)
	require.Equal(t, "null", string(evs[0].Value["event_type"]))
}

// TestWebhookSourceBuckets: a subscription to a bucket renders its path from params
// checked by the bucket's schema, and only deliveries to that bucket's stream wake it.
func TestWebhookSourceBuckets(t *testing.T) {
	h := webhookSetup(t)
	requireStatus(t, h.do(http.MethodPost, sourcesPath, map[string]any{"webhookKey": "gh", "scheme": "github", "secret": hookSecret,
		"buckets": []any{map[string]any{"key": "repo", "label": "Repository", "pathTemplate": "repos/:owner/:repo",
			"paramsSchema": map[string]any{"type": "object", "required": []string{"owner", "repo"},
				"properties": map[string]any{"owner": map[string]any{"type": "string"}, "repo": map[string]any{"type": "string"}}}}}},
		asPrincipal, "user:alice"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/bot/a", `{}`, asPrincipal, "user:alice"), http.StatusCreated)
	at := entitiesPath + "/bot/a/webhook-source-subscriptions/"
	requireError(t, h.do(http.MethodPut, at+"x", `{"webhookKey":"gh","bucketKey":"repo","params":{"owner":"o"}}`, asPrincipal, "user:alice"),
		http.StatusBadRequest, "INVALID_REQUEST", "bucket params do not match paramsSchema for \"repo\": / must have required property 'repo'")
	requireError(t, h.do(http.MethodPut, at+"x", `{"webhookKey":"gh","bucketKey":"nope"}`, asPrincipal, "user:alice"),
		http.StatusBadRequest, "INVALID_REQUEST", `Unknown bucket "nope" for webhook source "gh"`)
	r := h.do(http.MethodPut, at+"r", `{"webhookKey":"gh","bucketKey":"repo","params":{"owner":"o","repo":"r"}}`, asPrincipal, "user:alice")
	requireStatus(t, r, http.StatusOK)
	require.Contains(t, string(r.Body), `"sourceUrl":"/_webhooks/gh/repos/o/r"`)
	// the bucket's stream exists once subscribed (the runtime reads it at once)
	require.Empty(t, h.webhookEvents("/_webhooks/gh/repos/o/r", "user:alice"))

	requireStatus(t, h.ghDeliver("gh/repos/o/other", "d-other", hookSecret, `{}`), http.StatusOK)
	requireStatus(t, h.ghDeliver("gh/not/a/bucket/path", "d-x", hookSecret, `{}`), http.StatusNotFound)
	requireStatus(t, h.ghDeliver("gh/repos/o/r", "d-mine", hookSecret, `{}`), http.StatusOK)
	testwait.Until(t, "the bucket's wake", func() bool { return len(wakesFor(h, "/bot/a")) == 1 })
	require.JSONEq(t, `[{"collection":"webhook_event","kind":"insert","key":"d-mine"}]`, string(wakesFor(h, "/bot/a")[0].Value["changes"]))
	evs := h.webhookEvents("/_webhooks/gh/repos/o/r", "user:alice")
	require.Len(t, evs, 1)
	require.Equal(t, "repos/o/r", str(t, evs[0].Value["bucket"]))
}

// TestWebhookSourceIsolation: bob neither sees nor subscribes to alice's private source
// (404, as for one that does not exist), nor reads its stream (403), nor revokes it;
// a public source is listed to him and he may subscribe his own entity to it; a revoked
// source takes no deliveries and is listed to nobody.
func TestWebhookSourceIsolation(t *testing.T) {
	h := webhookSetup(t)
	requireStatus(t, h.do(http.MethodPost, sourcesPath, `{"webhookKey":"private","scheme":"github","secret":"`+hookSecret+`"}`,
		asPrincipal, "user:alice"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPost, sourcesPath, `{"webhookKey":"shared","scheme":"github","secret":"`+hookSecret+`","public":true}`,
		asPrincipal, "user:alice"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/bot/bobs", `{}`, asPrincipal, "user:bob"), http.StatusCreated)

	listed := func(who string) []string {
		r := h.do(http.MethodGet, sourcesPath, nil, asPrincipal, who)
		requireStatus(t, r, http.StatusOK)
		var l struct {
			WebhookSources []struct{ WebhookKey string } `json:"webhookSources"`
		}
		r.decode(t, &l)
		var keys []string
		for _, s := range l.WebhookSources {
			keys = append(keys, s.WebhookKey)
		}
		return keys
	}
	require.Equal(t, []string{"private", "shared"}, listed("user:alice"))
	require.Equal(t, []string{"shared"}, listed("user:bob"))
	require.Equal(t, []string{"private", "shared"}, listed("system:dev-local"), "privileged principals see every source")

	requireError(t, h.do(http.MethodGet, sourcesPath+"/private", nil, asPrincipal, "user:bob"), http.StatusNotFound, "NOT_FOUND",
		`Webhook source "private" not found`)
	requireError(t, h.do(http.MethodPut, entitiesPath+"/bot/bobs/webhook-source-subscriptions/s", `{"webhookKey":"private"}`,
		asPrincipal, "user:bob"), http.StatusNotFound, "NOT_FOUND", `Webhook source "private" not found`)
	requireStatus(t, h.do(http.MethodGet, "/_webhooks/private?offset=-1", nil, asPrincipal, "user:bob"), http.StatusForbidden)
	requireStatus(t, h.do(http.MethodDelete, sourcesPath+"/private", nil, asPrincipal, "user:bob"), http.StatusNotFound)
	// the public one
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/bot/bobs/webhook-source-subscriptions/s", `{"webhookKey":"shared"}`,
		asPrincipal, "user:bob"), http.StatusOK)
	requireStatus(t, h.do(http.MethodGet, "/_webhooks/shared?offset=-1", nil, asPrincipal, "user:bob"), http.StatusOK)
	requireStatus(t, h.do(http.MethodDelete, sourcesPath+"/shared", nil, asPrincipal, "user:bob"), http.StatusForbidden)
	// nobody appends to, closes or deletes a source's stream through the stream API, and
	// nobody makes a stream under /_webhooks/
	for _, who := range []string{"user:alice", "system:dev-local"} {
		requireStatus(t, h.do(http.MethodPost, "/_webhooks/private", `[{"type":"webhook_event","key":"x","value":{}}]`, asPrincipal, who), http.StatusForbidden)
		requireStatus(t, h.do(http.MethodDelete, "/_webhooks/private", nil, asPrincipal, who), http.StatusForbidden)
		requireStatus(t, h.do(http.MethodPut, "/_webhooks/private/new", nil, asPrincipal, who), http.StatusForbidden)
	}
	// the runtime's ensureStream PUT on an existing source stream is confirmed
	requireStatus(t, h.do(http.MethodPut, "/_webhooks/private", nil, asPrincipal, "user:alice", "Content-Type", "application/json"), http.StatusOK)
	requireStatus(t, h.do(http.MethodPut, "/_webhooks/private", nil, asPrincipal, "user:bob", "Content-Type", "application/json"), http.StatusForbidden)
	// a bob's source with alice's keys: taken
	requireError(t, h.do(http.MethodPost, sourcesPath, `{"webhookKey":"other","endpointKey":"private","scheme":"github"}`,
		asPrincipal, "user:bob"), http.StatusConflict, "WEBHOOK_SOURCE_EXISTS", "A webhook source with this webhookKey or endpointKey exists")

	// revoked: no deliveries, not listed, keys still taken
	requireStatus(t, h.do(http.MethodDelete, sourcesPath+"/private", nil, asPrincipal, "user:alice"), http.StatusOK)
	requireStatus(t, h.ghDeliver("private", "d-1", hookSecret, `{}`), http.StatusNotFound)
	require.Equal(t, []string{"shared"}, listed("user:alice"))
	requireStatus(t, h.do(http.MethodPost, sourcesPath, `{"webhookKey":"private","scheme":"github"}`, asPrincipal, "user:bob"), http.StatusConflict)
	requireError(t, h.do(http.MethodPut, entitiesPath+"/bot/bobs/webhook-source-subscriptions/s2", `{"webhookKey":"private"}`,
		asPrincipal, "user:alice"), http.StatusUnauthorized, "UNAUTHORIZED", "Principal is not allowed to write /bot/bobs")
}

// TestWebhookSourceBudgetAndRefusalLog: each tenant's deliveries are budgeted (429 with
// Retry-After beyond, nothing appended); forged deliveries cost no budget and are
// logged, at most one line per interval however many arrive.
func TestWebhookSourceBudgetAndRefusalLog(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	h := setup(t, testserver.Options{Logger: zap.New(core), WebhookSources: webhooksrc.Options{DeliveriesPerMinute: 2}})
	for _, key := range []string{"one", "two"} {
		requireStatus(t, h.do(http.MethodPost, sourcesPath, `{"webhookKey":"`+key+`","scheme":"github","secret":"`+hookSecret+`"}`,
			asPrincipal, "user:alice"), http.StatusCreated)
	}
	requireStatus(t, h.do(http.MethodPost, sourcesPath, `{"webhookKey":"bobs","scheme":"github","secret":"`+hookSecret+`"}`,
		asPrincipal, "user:bob"), http.StatusCreated)
	forged := testutil.ToFloat64(metrics.WebhookSourceDeliveries.WithLabelValues("forged"))
	for i := range 20 {
		requireStatus(t, h.ghDeliver("one", "forged-"+strconv.Itoa(i), "not the secret, not at all", `{}`), http.StatusUnauthorized)
	}
	require.GreaterOrEqual(t, testutil.ToFloat64(metrics.WebhookSourceDeliveries.WithLabelValues("forged"))-forged, 20.0, "counted")
	refusals := logs.FilterMessage("webhook delivery refused: signature").All()
	require.Len(t, refusals, 1, "one line for twenty refusals within the interval")
	require.Equal(t, "one", refusals[0].ContextMap()["webhook_key"])

	requireStatus(t, h.ghDeliver("one", "a", hookSecret, `{}`), http.StatusOK)
	requireStatus(t, h.ghDeliver("two", "b", hookSecret, `{}`), http.StatusOK)
	r := h.ghDeliver("one", "c", hookSecret, `{}`)
	requireError(t, r, http.StatusTooManyRequests, "RATE_LIMITED", "The webhook source's owner has spent its delivery budget")
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, retry)
	require.Len(t, h.webhookEvents("/_webhooks/one", "user:alice"), 1, "nothing appended beyond the budget")
	// another tenant's budget is its own
	requireStatus(t, h.ghDeliver("bobs", "d", hookSecret, `{}`), http.StatusOK)
}

// TestWebhookSourceBucketStreamsBounded: a source's bucket streams, made by
// subscriptions (anyone's, for a public source) and deliveries, are bounded per source.
func TestWebhookSourceBucketStreamsBounded(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true, WebhookSources: webhooksrc.Options{MaxBucketStreams: 1}})
	requireStatus(t, h.do(http.MethodPost, typesPath, `{"name":"bot","description":"d"}`), http.StatusCreated)
	h.mustSpawn("bot", "a", `{}`)
	requireStatus(t, h.do(http.MethodPost, sourcesPath, `{"webhookKey":"gh","scheme":"github","secret":"`+hookSecret+`","public":true,
		"buckets":[{"key":"repo","pathTemplate":"repos/:name","paramsSchema":{"type":"object"}}]}`), http.StatusCreated)
	at := entitiesPath + "/bot/a/webhook-source-subscriptions/"
	requireStatus(t, h.do(http.MethodPut, at+"one", `{"webhookKey":"gh","bucketKey":"repo","params":{"name":"one"}}`), http.StatusOK)
	requireStatus(t, h.do(http.MethodPut, at+"one-again", `{"webhookKey":"gh","bucketKey":"repo","params":{"name":"one"}}`), http.StatusOK)
	r := h.do(http.MethodPut, at+"two", `{"webhookKey":"gh","bucketKey":"repo","params":{"name":"two"}}`)
	requireError(t, r, http.StatusTooManyRequests, "QUOTA_EXCEEDED", "The webhook source has the most bucket streams allowed")
	requireStatus(t, h.ghDeliver("gh/repos/three", "d-3", hookSecret, `{}`), http.StatusTooManyRequests)
	requireStatus(t, h.ghDeliver("gh/repos/one", "d-1", hookSecret, `{}`), http.StatusOK)
	requireStatus(t, h.ghDeliver("gh", "d-root", hookSecret, `{}`), http.StatusOK)
}

// TestWebhookSourceConcurrentRedeliveries: the same delivery sent ten times at once is
// appended once; exactly one answer says it was new.
func TestWebhookSourceConcurrentRedeliveries(t *testing.T) {
	h := setup(t, testserverQuiet())
	requireStatus(t, h.do(http.MethodPost, sourcesPath, `{"webhookKey":"gh","scheme":"github","secret":"`+hookSecret+`"}`), http.StatusCreated)
	var wg sync.WaitGroup
	answers := make([]string, 10)
	for i := range answers {
		wg.Go(func() {
			r := h.ghDeliver("gh", "same", hookSecret, `{"n":1}`)
			if r.Status == http.StatusOK {
				answers[i] = string(r.Body)
			}
		})
	}
	wg.Wait()
	fresh := 0
	for _, a := range answers {
		require.Contains(t, []string{`{"key":"same","duplicate":false}`, `{"key":"same","duplicate":true}`}, a)
		if strings.Contains(a, "false") {
			fresh++
		}
	}
	require.Equal(t, 1, fresh)
	require.Len(t, h.webhookEvents("/_webhooks/gh", "system:dev-local"), 1)
}

// TestWebhookSourceObservedByManifest: Electric's runtime's observe(webhook(key)) writes
// a manifest entry itself (with the entity's write token): it registers a wake when the
// entity's creator may read the source, and nothing on another principal's private one.
func TestWebhookSourceObservedByManifest(t *testing.T) {
	h := webhookSetup(t)
	requireStatus(t, h.do(http.MethodPost, sourcesPath, `{"webhookKey":"gh","scheme":"github","secret":"`+hookSecret+`"}`,
		asPrincipal, "user:alice"), http.StatusCreated)
	tokens := map[string]string{}
	for url, who := range map[string]string{"a": "user:alice", "bobs": "user:bob"} {
		r := h.do(http.MethodPut, entitiesPath+"/bot/"+url, `{}`, asPrincipal, who)
		requireStatus(t, r, http.StatusCreated)
		tokens[url] = r.Header.Get("X-Write-Token")
	}
	manifest := `[{"type":"manifest","key":"source:webhook:gh","value":{"key":"source:webhook:gh","kind":"source",
		"sourceType":"webhook","sourceRef":"gh","config":{"endpointKey":"gh","streamUrl":"/_webhooks/gh"},
		"wake":{"on":"change","collections":["webhook_event"],"ops":["insert"]}},"headers":{"operation":"insert"}}]`
	for url, tok := range tokens {
		requireStatus(t, h.do(http.MethodPost, "/bot/"+url+"/main", manifest, "Authorization", "Bearer "+tok), http.StatusNoContent)
	}
	requireStatus(t, h.ghDeliver("gh", "d-1", hookSecret, `{}`), http.StatusOK)
	testwait.Until(t, "alice's entity's wake", func() bool { return len(wakesFor(h, "/bot/a")) == 1 })
	require.Empty(t, wakesFor(h, "/bot/bobs"), "bob's entity may not observe alice's private source")
}
