package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/webhooksrc"
)

// TestHostileWebhookSourceInput: hostile or careless requests to the webhook source,
// subscription and delivery routes are refused with a 4xx and the documented code, write
// nothing (streams, dedupe keys, sources, wake registrations, manifest entries) and leave
// the server serving; no answer carries the secret.
func TestHostileWebhookSourceInput(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true, API: api.Config{MaxBodyBytes: 64 << 10},
		WebhookSources: webhooksrc.Options{MaxDeliveryBytes: 8 << 10}})
	h.registerType(`{"name":"bot","description":"d"}`)
	h.mustSpawn("bot", "b1", `{}`)
	requireStatus(t, h.do(http.MethodPost, sourcesPath, `{"webhookKey":"hook","scheme":"github","secret":"`+hookSecret+`",
		"buckets":[{"key":"repo","label":"Repo","pathTemplate":"repos/:owner","paramsSchema":{"type":"object","required":["owner"]}}]}`),
		http.StatusCreated)
	const (
		src = sourcesPath
		sub = entitiesPath + "/bot/b1/webhook-source-subscriptions/"
		dlv = deliveryPath + "hook"
	)
	signed := func(body string, extra ...string) []string {
		return append([]string{"X-Hub-Signature-256", githubSignature(hookSecret, body)}, extra...)
	}
	big := `{"x":"` + strings.Repeat("x", 9<<10) + `"}`
	badUTF8 := "\"\xff\xfe\""
	c := func(name, method, path string, body any, status int, code string, headers ...string) hostileCase {
		return hostileCase{name: name, method: method, path: path, body: body, status: status, code: code, headers: headers}
	}
	cases := []hostileCase{
		// sources
		c("source: not JSON", "POST", src, `{"webhookKey":`, bad, invalid),
		c("source: array", "POST", src, `[]`, bad, invalid),
		c("source: no key", "POST", src, `{"scheme":"github"}`, bad, invalid),
		c("source: key uppercase", "POST", src, `{"webhookKey":"Hook","scheme":"github"}`, bad, invalid),
		c("source: key too long", "POST", src, `{"webhookKey":"`+strings.Repeat("k", 64)+`","scheme":"github"}`, bad, invalid),
		c("source: key with slash", "POST", src, `{"webhookKey":"a/b","scheme":"github"}`, bad, invalid),
		c("source: key dotdot", "POST", src, `{"webhookKey":"..","scheme":"github"}`, bad, invalid),
		c("source: endpoint key NUL", "POST", src, `{"webhookKey":"a","endpointKey":"a\u0000","scheme":"github"}`, bad, invalid),
		c("source: unknown scheme", "POST", src, `{"webhookKey":"a","scheme":"none"}`, bad, invalid),
		c("source: no scheme", "POST", src, `{"webhookKey":"a"}`, bad, invalid),
		c("source: secret too short", "POST", src, `{"webhookKey":"a","scheme":"github","secret":"short"}`, bad, invalid),
		c("source: secret too long", "POST", src, `{"webhookKey":"a","scheme":"github","secret":"`+strings.Repeat("s", 257)+`"}`, bad, invalid),
		c("source: secret NUL", "POST", src, `{"webhookKey":"a","scheme":"github","secret":"0123456789abcdef\u0000"}`, bad, invalid),
		c("source: label bell", "POST", src, `{"webhookKey":"a","scheme":"github","label":"ring\u0007"}`, bad, invalid),
		c("source: description too long", "POST", src, `{"webhookKey":"a","scheme":"github","description":"`+strings.Repeat("d", 4097)+`"}`, bad, invalid),
		c("source: public not boolean", "POST", src, `{"webhookKey":"a","scheme":"github","public":"yes"}`, bad, invalid),
		c("source: public null", "POST", src, `{"webhookKey":"a","scheme":"github","public":null}`, bad, invalid),
		c("source: unknown member", "POST", src, `{"webhookKey":"a","scheme":"github","owner":"user:x"}`, bad, invalid),
		c("source: buckets not array", "POST", src, `{"webhookKey":"a","scheme":"github","buckets":{}}`, bad, invalid),
		c("source: bucket unknown member", "POST", src, `{"webhookKey":"a","scheme":"github","buckets":[{"key":"b","pathTemplate":"x","evil":1}]}`, bad, invalid),
		c("source: bucket template dotdot", "POST", src, `{"webhookKey":"a","scheme":"github","buckets":[{"key":"b","pathTemplate":"../x"}]}`, bad, invalid),
		c("source: bucket template leading slash", "POST", src, `{"webhookKey":"a","scheme":"github","buckets":[{"key":"b","pathTemplate":"/x"}]}`, bad, invalid),
		c("source: bucket template bad param", "POST", src, `{"webhookKey":"a","scheme":"github","buckets":[{"key":"b","pathTemplate":":1x"}]}`, bad, invalid),
		c("source: bucket template too long", "POST", src, `{"webhookKey":"a","scheme":"github","buckets":[{"key":"b","pathTemplate":"`+strings.Repeat("x", 257)+`"}]}`, bad, invalid),
		c("source: bucket keys repeated", "POST", src, `{"webhookKey":"a","scheme":"github","buckets":[{"key":"b","pathTemplate":"x"},{"key":"b","pathTemplate":"y"}]}`, bad, invalid),
		c("source: bucket schema uncompilable", "POST", src, `{"webhookKey":"a","scheme":"github","buckets":[{"key":"b","pathTemplate":"x","paramsSchema":{"type":"nope"}}]}`, bad, invalid),
		c("source: bucket schema remote ref", "POST", src, `{"webhookKey":"a","scheme":"github","buckets":[{"key":"b","pathTemplate":"x","paramsSchema":{"$ref":"http://evil/x"}}]}`, bad, invalid),
		c("source: too many buckets", "POST", src, `{"webhookKey":"a","scheme":"github","buckets":[`+strings.TrimSuffix(strings.Repeat(`{"key":"b","pathTemplate":"x"},`, 33), ",")+`]}`, bad, invalid),
		c("source: bucket label NUL", "POST", src, `{"webhookKey":"a","scheme":"github","buckets":[{"key":"b","label":"\u0000","pathTemplate":"x"}]}`, bad, invalid),
		c("source: taken", "POST", src, `{"webhookKey":"hook","scheme":"github"}`, conf, "WEBHOOK_SOURCE_EXISTS"),
		c("source: endpoint taken", "POST", src, `{"webhookKey":"other","endpointKey":"hook","scheme":"github"}`, conf, "WEBHOOK_SOURCE_EXISTS"),
		c("source: get unknown", "GET", src+"/nope", nil, nf, "NOT_FOUND"),
		c("source: get bad key", "GET", src+"/"+strings.Repeat("k", 300), nil, nf, "NOT_FOUND"),
		c("source: revoke unknown", "DELETE", src+"/nope", nil, nf, "NOT_FOUND"),
		// subscriptions
		c("sub: not JSON", "PUT", sub+"s", `{"webhookKey":`, bad, invalid),
		c("sub: no webhookKey", "PUT", sub+"s", `{}`, bad, invalid),
		c("sub: webhookKey not a string", "PUT", sub+"s", `{"webhookKey":1}`, bad, invalid),
		c("sub: unknown source", "PUT", sub+"s", `{"webhookKey":"nope"}`, nf, "NOT_FOUND"),
		c("sub: params not object", "PUT", sub+"s", `{"webhookKey":"hook","params":[1]}`, bad, invalid),
		c("sub: params too large", "PUT", sub+"s", `{"webhookKey":"hook","params":{"x":"`+strings.Repeat("p", 5000)+`"}}`, bad, invalid),
		c("sub: params NUL", "PUT", sub+"s", `{"webhookKey":"hook","params":{"x":"\u0000"}}`, bad, invalid),
		c("sub: unknown bucket", "PUT", sub+"s", `{"webhookKey":"hook","bucketKey":"nope"}`, bad, invalid),
		c("sub: bucket params missing", "PUT", sub+"s", `{"webhookKey":"hook","bucketKey":"repo","params":{}}`, bad, invalid),
		c("sub: bucket param not scalar", "PUT", sub+"s", `{"webhookKey":"hook","bucketKey":"repo","params":{"owner":{"a":1}}}`, bad, invalid),
		c("sub: bucket param escapes", "PUT", sub+"s", `{"webhookKey":"hook","bucketKey":"repo","params":{"owner":"../x"}}`, bad, invalid),
		c("sub: bucket param empty", "PUT", sub+"s", `{"webhookKey":"hook","bucketKey":"repo","params":{"owner":""}}`, bad, invalid),
		c("sub: unknown filter", "PUT", sub+"s", `{"webhookKey":"hook","filterKey":"f"}`, bad, invalid),
		c("sub: lifetime unknown kind", "PUT", sub+"s", `{"webhookKey":"hook","lifetime":{"kind":"forever"}}`, bad, invalid),
		c("sub: lifetime bad time", "PUT", sub+"s", `{"webhookKey":"hook","lifetime":{"kind":"expires_at","at":"tomorrow"}}`, bad, invalid),
		c("sub: lifetime extra member", "PUT", sub+"s", `{"webhookKey":"hook","lifetime":{"kind":"manual","x":1}}`, bad, invalid),
		c("sub: reason NUL", "PUT", sub+"s", `{"webhookKey":"hook","reason":"\u0000"}`, bad, invalid),
		c("sub: reason too long", "PUT", sub+"s", `{"webhookKey":"hook","reason":"`+strings.Repeat("r", 1025)+`"}`, bad, invalid),
		c("sub: unknown member", "PUT", sub+"s", `{"webhookKey":"hook","id":"x"}`, bad, invalid),
		c("sub: id too long", "PUT", sub+strings.Repeat("i", 201), `{"webhookKey":"hook"}`, bad, invalid),
		c("sub: principal entity", "PUT", entitiesPath+"/principal/x/webhook-source-subscriptions/s", `{"webhookKey":"hook"}`, bad, invalid),
		c("sub: unknown entity", "PUT", entitiesPath+"/bot/none/webhook-source-subscriptions/s", `{"webhookKey":"hook"}`, nf, "NOT_FOUND"),
		// deliveries
		c("delivery: unsigned", "POST", dlv, `{}`, http.StatusUnauthorized, "UNAUTHORIZED", "X-GitHub-Delivery", "d1"),
		c("delivery: forged", "POST", dlv, `{}`, http.StatusUnauthorized, "UNAUTHORIZED", "X-GitHub-Delivery", "d1", "X-Hub-Signature-256", githubSignature("another secret entirely", `{}`)),
		c("delivery: sha1 signature", "POST", dlv, `{}`, http.StatusUnauthorized, "UNAUTHORIZED", "X-GitHub-Delivery", "d1", "X-Hub-Signature-256", "sha1="+strings.Repeat("0", 40)),
		c("delivery: signature not hex", "POST", dlv, `{}`, http.StatusUnauthorized, "UNAUTHORIZED", "X-GitHub-Delivery", "d1", "X-Hub-Signature-256", "sha256="+strings.Repeat("z", 64)),
		c("delivery: signature short", "POST", dlv, `{}`, http.StatusUnauthorized, "UNAUTHORIZED", "X-GitHub-Delivery", "d1", "X-Hub-Signature-256", "sha256=00"),
		c("delivery: signature huge", "POST", dlv, `{}`, http.StatusUnauthorized, "UNAUTHORIZED", "X-GitHub-Delivery", "d1", "X-Hub-Signature-256", "sha256="+strings.Repeat("0", 5000)),
		c("delivery: signed, no delivery id", "POST", dlv, `{}`, bad, invalid, signed(`{}`)...),
		c("delivery: signed, delivery id too long", "POST", dlv, `{}`, bad, invalid, signed(`{}`, "X-GitHub-Delivery", strings.Repeat("d", 129))...),
		c("delivery: signed, event type too long", "POST", dlv, `{}`, bad, invalid, signed(`{}`, "X-GitHub-Delivery", "d1", "X-GitHub-Event", strings.Repeat("e", 129))...),
		c("delivery: signed, not JSON", "POST", dlv, `{"a":`, bad, invalid, signed(`{"a":`, "X-GitHub-Delivery", "d1")...),
		c("delivery: signed, invalid UTF-8", "POST", dlv, badUTF8, bad, invalid, signed(badUTF8, "X-GitHub-Delivery", "d1")...),
		c("delivery: signed, form payload not JSON", "POST", dlv, `payload=%7B`, bad, invalid, signed(`payload=%7B`, "X-GitHub-Delivery", "d1", "Content-Type", "application/x-www-form-urlencoded")...),
		c("delivery: too large", "POST", dlv, big, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", signed(big, "X-GitHub-Delivery", "d1")...),
		{name: "delivery: too large, chunked", method: "POST", path: dlv, body: big, chunked: true, status: http.StatusRequestEntityTooLarge,
			code: "PAYLOAD_TOO_LARGE", headers: signed(big, "X-GitHub-Delivery", "d1")},
		c("delivery: unknown endpoint", "POST", deliveryPath+"nope", `{}`, nf, "NOT_FOUND", signed(`{}`, "X-GitHub-Delivery", "d1")...),
		c("delivery: endpoint not a key", "POST", deliveryPath+"NOPE", `{}`, nf, "NOT_FOUND", signed(`{}`, "X-GitHub-Delivery", "d1")...),
		c("delivery: bucket path not a bucket", "POST", dlv+"/other/x", `{}`, nf, "NOT_FOUND", signed(`{}`, "X-GitHub-Delivery", "d1")...),
		c("delivery: bucket path dotdot", "POST", dlv+"/repos/..", `{}`, nf, "NOT_FOUND", signed(`{}`, "X-GitHub-Delivery", "d1")...),
		c("delivery: bucket path encoded slash", "POST", dlv+"/repos/a%2Fb", `{}`, nf, "NOT_FOUND", signed(`{}`, "X-GitHub-Delivery", "d1")...),
		c("delivery: query too long", "POST", dlv+"?q="+strings.Repeat("q", 2100), `{}`, bad, invalid, signed(`{}`, "X-GitHub-Delivery", "d1")...),
		c("delivery: GET", "GET", dlv, nil, http.StatusMethodNotAllowed, ""),
	}
	extra := func() string {
		var fp string
		require.NoError(t, h.srv.Pool.QueryRow(context.Background(), `SELECT concat_ws(' | ',
			(SELECT count(*) || '/' || sum(revision) FROM webhook_sources), (SELECT count(*) FROM wake_registrations))`).Scan(&fp))
		return fp
	}
	h.runHostileCases(t, cases, extra, func(t *testing.T, r *response) {
		require.NotContains(t, string(r.Body), hookSecret)
	})
	// still serving: a good delivery is taken
	requireStatus(t, h.do(http.MethodPost, dlv, `{}`, signed(`{}`, "X-GitHub-Delivery", "ok")...), http.StatusOK)
}
