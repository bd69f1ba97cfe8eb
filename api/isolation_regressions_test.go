package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/internal/testserver"
)

// One test per finding of issue 24's adversarial review, each reproducing the attack
// as it was made (a second principal with a valid token) and asserting it now fails.

// callH makes a request as sub (or with auth as the raw Authorization value when sub
// starts with "Bearer ") with headers as name/value pairs.
func (s *jwtServer) callH(t *testing.T, sub, method, path, body string, headers ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case strings.HasPrefix(sub, "Bearer "):
		req.Header.Set("Authorization", sub)
	case sub != "":
		req.Header.Set("Authorization", "Bearer "+s.token(t, sub))
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(data)
}

func (s *jwtServer) mustH(t *testing.T, sub, method, path, body string, want int, headers ...string) string {
	t.Helper()
	status, out := s.callH(t, sub, method, path, body, headers...)
	require.Equal(t, want, status, "%s %s as %q: %s", method, path, sub, out)
	return out
}

// aliceVault is alice's type vault with entity /vault/v1 holding one message; it returns
// the entity's write token.
func aliceVault(t *testing.T, s *jwtServer) string {
	s.must(t, "user:alice", "POST", "/_electric/entity-types", `{"name":"vault","description":"d",
		"slash_commands":[{"name":"open","description":"Open"}]}`, http.StatusCreated)
	status, token := spawnAs(t, s, "user:alice", "/vault/v1")
	require.Equal(t, http.StatusCreated, status)
	s.must(t, "user:alice", "POST", "/_electric/entities/vault/v1/send",
		`{"type":"composer_input","payload":{"source":"the combination is 1234","nodes":[]}}`, http.StatusOK)
	return token
}

func spawnAs(t *testing.T, s *jwtServer, sub, url string) (int, string) {
	req, err := http.NewRequest("PUT", s.URL+"/_electric/entities"+url, strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token(t, sub))
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	return res.StatusCode, res.Header.Get("X-Write-Token")
}

// Finding 1: a fork read any stream.
func TestFinding1AForkNeedsReadOnItsSource(t *testing.T) {
	s := startJWT(t)
	aliceVault(t, s)
	for _, from := range []string{"/vault/v1/main", "/vault/v1/slash-commands", "/v1/stream/vault/v1/main",
		s.URL + "/vault/v1/main", s.URL + "/v1/stream/vault/v1/slash-commands"} {
		out := s.mustH(t, "user:bob", "PUT", "/bobcopy", "", http.StatusForbidden, "Stream-Forked-From", from)
		require.Contains(t, out, "not allowed to read /vault/v1", from)
		s.mustH(t, "user:bob", "GET", "/bobcopy?offset=-1", "", http.StatusNotFound)
	}
	// a plain stream of alice's, too
	s.must(t, "user:alice", "PUT", "/alice/diary", `[{"secret":1}]`, http.StatusCreated)
	s.mustH(t, "user:bob", "PUT", "/bobcopy", "", http.StatusForbidden, "Stream-Forked-From", "/alice/diary")
	// with read, the fork is the forker's own stream
	s.must(t, "user:alice", "POST", "/_electric/entities/vault/v1/grants",
		`{"subject_kind":"principal","subject_value":"user:bob","permission":"read"}`, http.StatusCreated)
	s.mustH(t, "user:bob", "PUT", "/bobcopy", "", http.StatusCreated, "Stream-Forked-From", "/vault/v1/main")
	require.Contains(t, s.must(t, "user:bob", "GET", "/bobcopy?offset=-1", "", http.StatusOK), "the combination is 1234")
	s.must(t, "user:carol", "GET", "/bobcopy?offset=-1", "", http.StatusForbidden)
}

// Finding 2: runner ids were first come, first served.
func TestFinding2ARunnerATypeNamesIsBoundToItsRegistrant(t *testing.T) {
	s := startJWT(t)
	// alice's type names runner laptop before anyone registered it
	s.must(t, "user:alice", "POST", "/_electric/entity-types", `{"name":"vault","description":"d",
		"default_dispatch_policy":{"targets":[{"type":"runner","runnerId":"laptop"}]}}`, http.StatusCreated)
	out := s.must(t, "user:carol", "POST", "/_electric/runners", `{"id":"laptop"}`, http.StatusForbidden)
	require.Contains(t, out, `named by entity type \"vault\" for another principal`)
	s.must(t, "user:alice", "POST", "/_electric/runners", `{"id":"laptop"}`, http.StatusCreated)
	status, _ := spawnAs(t, s, "user:alice", "/vault/v1")
	require.Equal(t, http.StatusCreated, status)
	s.must(t, "user:carol", "POST", "/_electric/runners/laptop/claim", `{}`, http.StatusForbidden)

	// a runner registered first by someone else is never dispatched to
	s.must(t, "user:carol", "POST", "/_electric/runners", `{"id":"desk"}`, http.StatusCreated)
	s.must(t, "user:alice", "POST", "/_electric/entity-types", `{"name":"safe","description":"d",
		"default_dispatch_policy":{"targets":[{"type":"runner","runnerId":"desk"}]}}`, http.StatusCreated)
	status, _ = spawnAs(t, s, "user:alice", "/safe/s1")
	require.Equal(t, http.StatusConflict, status)
	s.must(t, "user:carol", "POST", "/_electric/runners/desk/claim", `{}`, http.StatusNoContent)

	// a type may name its runner's owner explicitly
	s.must(t, "user:alice", "POST", "/_electric/entity-types", `{"name":"shared","description":"d",
		"default_dispatch_policy":{"targets":[{"type":"runner","runnerId":"desk","owner_principal":"user:carol"}]}}`, http.StatusCreated)
	status, _ = spawnAs(t, s, "user:alice", "/shared/x1")
	require.Equal(t, http.StatusCreated, status)
	out = s.must(t, "user:carol", "POST", "/_electric/runners/desk/claim", `{}`, http.StatusOK)
	require.Contains(t, out, "/shared/x1/main")
}

// Finding 3: deleting a type made its entities' streams plain, public streams.
func TestFinding3DeletingATypeChangesNothingAboutItsEntitiesStreams(t *testing.T) {
	s := startJWT(t)
	token := aliceVault(t, s)
	s.must(t, "user:alice", "DELETE", "/_electric/entity-types/vault", "", http.StatusNoContent)
	s.must(t, "user:bob", "GET", "/vault/v1/main?offset=-1", "", http.StatusForbidden)
	s.must(t, "user:bob", "GET", "/vault/v1/slash-commands?offset=-1", "", http.StatusForbidden)
	s.mustH(t, "user:bob", "HEAD", "/vault/v1/main", "", http.StatusForbidden)
	s.must(t, "user:bob", "POST", "/vault/v1/main", `[{"type":"x","key":"k","value":{},"headers":{"operation":"insert"}}]`, http.StatusUnauthorized)
	s.must(t, "", "POST", "/vault/v1/main", `[{"type":"x","key":"k","value":{},"headers":{"operation":"insert"}}]`, http.StatusUnauthorized)
	s.must(t, "user:bob", "DELETE", "/vault/v1/main", "", http.StatusMethodNotAllowed)
	s.must(t, "user:alice", "DELETE", "/vault/v1/main", "", http.StatusMethodNotAllowed)
	require.Contains(t, s.must(t, "user:alice", "GET", "/vault/v1/main?offset=-1", "", http.StatusOK), "the combination is 1234")
	s.mustH(t, "Bearer "+token, "POST", "/vault/v1/main", `[{"type":"note","key":"k","value":{},"headers":{"operation":"insert"}}]`,
		http.StatusNoContent)
	// a type registered again under the name by someone else gains nothing
	s.must(t, "user:bob", "POST", "/_electric/entity-types", `{"name":"vault","description":"mine now"}`, http.StatusCreated)
	s.must(t, "user:bob", "GET", "/vault/v1/main?offset=-1", "", http.StatusForbidden)
}

// Finding 4: a runner's wake_stream could be anyone's stream, and wake streams were
// anyone's to read, write and delete.
func TestFinding4WakeStreamsAreTheServers(t *testing.T) {
	s := startJWT(t)
	aliceVault(t, s)
	s.must(t, "user:alice", "PUT", "/alice/inbox", `[]`, http.StatusCreated)
	s.must(t, "user:bob", "POST", "/_electric/runners", `{"id":"bobr","wake_stream":"/vault/v1/main"}`, http.StatusBadRequest)
	s.must(t, "user:bob", "POST", "/_electric/runners", `{"id":"bobr","wake_stream":"/alice/inbox"}`, http.StatusConflict)
	s.must(t, "user:bob", "POST", "/_electric/runners", `{"id":"bobr","wake_stream":"/runners/alr/wake"}`, http.StatusBadRequest)
	s.must(t, "user:bob", "PUT", "/runners/alr/wake", `[]`, http.StatusForbidden) // not pre-created by a client either

	s.must(t, "user:alice", "POST", "/_electric/runners", `{"id":"alr"}`, http.StatusCreated)
	s.must(t, "user:alice", "GET", "/runners/alr/wake?offset=-1", "", http.StatusOK)
	s.must(t, "user:bob", "GET", "/runners/alr/wake?offset=-1", "", http.StatusForbidden)
	for _, who := range []string{"user:bob", "user:alice"} {
		s.must(t, who, "POST", "/runners/alr/wake", `[{"type":"wake"}]`, http.StatusForbidden)
		s.mustH(t, who, "POST", "/runners/alr/wake", "", http.StatusForbidden, "Stream-Closed", "true")
		s.must(t, who, "DELETE", "/runners/alr/wake", "", http.StatusForbidden)
	}
	// a custom wake stream is created for the runner and is as much the server's
	s.must(t, "user:bob", "POST", "/_electric/runners", `{"id":"bobr","wake_stream":"/bob/wakes"}`, http.StatusCreated)
	s.must(t, "user:bob", "POST", "/bob/wakes", `[{"type":"wake"}]`, http.StatusForbidden)
	s.must(t, "user:alice", "GET", "/bob/wakes?offset=-1", "", http.StatusForbidden)
	// registering again keeps it, and an attempt to move it elsewhere changes nothing
	out := s.must(t, "user:bob", "POST", "/_electric/runners", `{"id":"bobr","wake_stream":"/alice/inbox"}`, http.StatusOK)
	require.Contains(t, out, `"wake_stream":"/bob/wakes"`)
}

// Finding 5: token subjects were normalised into other principals.
func TestFinding5TokenSubjectsAreTakenLiterally(t *testing.T) {
	s := startJWT(t, "service:ops")
	s.must(t, "service:ops", "GET", "/_electric/metrics", "", http.StatusOK)
	for _, sub := range []string{" service:ops", "service:ops ", "service:ops\u00a0", "service:ops\u200b", "\tservice:ops"} {
		s.must(t, sub, "GET", "/_electric/metrics", "", http.StatusUnauthorized)
	}
	// not decoded: a user of that literal id, who is no admin
	s.must(t, "/principal/service%3Aops", "GET", "/_electric/metrics", "", http.StatusForbidden)
	s.must(t, "Service:ops", "GET", "/_electric/metrics", "", http.StatusForbidden)
}

// Finding 6: plain streams had no owner in jwt mode, and a plain stream could pre-empt
// an entity's path.
func TestFinding6PlainStreamsBelongToTheirCreator(t *testing.T) {
	s := startJWT(t)
	s.must(t, "user:alice", "PUT", "/alice/diary", `[{"n":1}]`, http.StatusCreated)
	s.must(t, "user:bob", "GET", "/alice/diary?offset=-1", "", http.StatusForbidden)
	s.mustH(t, "user:bob", "GET", "/alice/diary?offset=-1&live=sse", "", http.StatusForbidden)
	s.mustH(t, "user:bob", "GET", "/alice/diary?offset=now&live=long-poll", "", http.StatusForbidden)
	s.mustH(t, "user:bob", "HEAD", "/alice/diary", "", http.StatusForbidden)
	s.must(t, "user:bob", "POST", "/alice/diary", `[{"n":2}]`, http.StatusForbidden)
	s.must(t, "user:bob", "DELETE", "/alice/diary", "", http.StatusForbidden)
	s.mustH(t, "user:bob", "PUT", "/alice/diary", "", http.StatusConflict, "Content-Type", "application/json")
	s.must(t, "user:bob", "GET", "/_electric/stream-grants?stream=/alice/diary", "", http.StatusForbidden)
	require.Equal(t, `[{"n":1}]`, s.must(t, "user:alice", "GET", "/alice/diary?offset=-1", "", http.StatusOK))

	// the future type's path cannot be planted
	s.must(t, "user:bob", "PUT", "/later/x/main", `[{"type":"inbox","key":"planted","value":{},"headers":{"operation":"insert"}}]`,
		http.StatusMethodNotAllowed)
	s.must(t, "user:bob", "PUT", "/later/x/slash-commands", `[]`, http.StatusMethodNotAllowed)
	s.must(t, "user:alice", "POST", "/_electric/entity-types", `{"name":"later","description":"d"}`, http.StatusCreated)
	status, _ := spawnAs(t, s, "user:alice", "/later/x")
	require.Equal(t, http.StatusCreated, status)
	require.NotContains(t, s.must(t, "user:alice", "GET", "/later/x/main?offset=-1", "", http.StatusOK), "planted")
}

// Finding 7: a write token could close an entity's main stream and write inbox or
// signal events with a forged from.
func TestFinding7AWriteTokenWritesWhatHandlersWrite(t *testing.T) {
	s := startJWT(t)
	token := aliceVault(t, s)
	write := func(body string, want int, headers ...string) string {
		t.Helper()
		return s.mustH(t, "Bearer "+token, "POST", "/vault/v1/main", body, want, headers...)
	}
	out := write("", http.StatusForbidden, "Stream-Closed", "true")
	require.Contains(t, out, "cannot close")
	write(`[{"type":"text","key":"t1","value":{"text":"bye"},"headers":{"operation":"insert"}}]`, http.StatusForbidden, "Stream-Closed", "true")
	s.must(t, "user:alice", "POST", "/_electric/entities/vault/v1/send",
		`{"type":"composer_input","payload":{"source":"still open","nodes":[]}}`, http.StatusOK)

	for name, ev := range map[string]string{
		"an inbox message":  `{"type":"inbox","key":"m9","value":{"from":"/principal/user%3Acarol","payload":{}},"headers":{"operation":"insert"}}`,
		"a signal":          `{"type":"signal","key":"s9","value":{"signal":"SIGKILL"},"headers":{"operation":"insert"}}`,
		"a spawn":           `{"type":"entity_created","key":"e","value":{},"headers":{"operation":"insert"}}`,
		"a wake":            `{"type":"wake","key":"w","value":{"kind":"schedule"},"headers":{"operation":"insert"}}`,
		"a tag":             `{"type":"tags","key":"team","value":{"key":"team","value":"x"},"headers":{"operation":"insert"}}`,
		"a command":         `{"type":"slash_command","key":"open","value":{"name":"open"},"headers":{"operation":"upsert"}}`,
		"a control event":   `{"type":"x","key":"k","headers":{"control":"reset"}}`,
		"a forged from":     `{"type":"text","key":"t2","value":{},"headers":{"operation":"insert","from":"/principal/user%3Acarol"}}`,
		"not an event":      `"just text"`,
		"an inbox rewrite":  `{"type":"inbox","key":"KEY","value":{"payload":{"source":"rewritten"}},"headers":{"operation":"update"}}`,
		"an inbox sender":   `{"type":"inbox","key":"KEY","value":{"status":"processed","from":"/principal/user%3Acarol"},"headers":{"operation":"update"}}`,
		"an inbox cancel":   `{"type":"inbox","key":"KEY","value":{"status":"cancelled"},"headers":{"operation":"update"}}`,
		"a missing message": `{"type":"inbox","key":"nope","value":{"status":"processed"},"headers":{"operation":"update"}}`,
	} {
		key := inboxKey(t, s)
		out := write("["+strings.ReplaceAll(ev, "KEY", key)+"]", http.StatusUnprocessableEntity)
		require.Contains(t, out, "write token writes the handler's own events", name)
	}
	// what Electric's runtime writes: its own events, an inbox message marked processed
	// and a signal marked handled (repeating the signal's value as the server wrote it)
	key := inboxKey(t, s)
	write(`[{"type":"text","key":"t3","value":{"text":"hi"},"headers":{"operation":"insert","from":"/vault/v1"}},
		{"type":"inbox","key":"`+key+`","value":{"status":"processed","processed_at":"2026-11-26T00:00:00Z"},"headers":{"operation":"update","from":"/vault/v1"}}]`,
		http.StatusNoContent)
	s.must(t, "user:alice", "POST", "/_electric/entities/vault/v1/signal", `{"signal":"SIGHUP","reason":"poke"}`, http.StatusOK)
	sig := lastEvent(t, s, "signal")
	handled := strings.Replace(sig.value, `"status":"unhandled"`, `"status":"handled","handled_by":"/vault/v1","outcome":"delivered"`, 1)
	require.NotEqual(t, sig.value, handled, "the server wrote the signal unhandled: %s", sig.value)
	write(`[{"type":"signal","key":"`+sig.key+`","value":`+handled+`,"headers":{"operation":"update"}}]`, http.StatusNoContent)
	forged := strings.Replace(handled, `"reason":"poke"`, `"reason":"forged"`, 1)
	require.NotEqual(t, handled, forged)
	write(`[{"type":"signal","key":"`+sig.key+`","value":`+forged+`,"headers":{"operation":"update"}}]`, http.StatusUnprocessableEntity)
	require.Equal(t, "idle", entityStatus(t, s))
}

type rawEvent struct{ key, value string }

// lastEvent is the newest event of typ on /vault/v1/main (key and value as raw JSON).
func lastEvent(t *testing.T, s *jwtServer, typ string) rawEvent {
	body := s.mustH(t, "user:alice", "GET", "/vault/v1/main?offset=-1", "", http.StatusOK)
	var out rawEvent
	for _, ev := range parseEvents(t, []byte(body)) {
		if ev.Type == typ {
			var raw struct {
				Value json.RawMessage `json:"value"`
			}
			require.NoError(t, json.Unmarshal(ev.Raw, &raw))
			out = rawEvent{key: ev.Key, value: string(raw.Value)}
		}
	}
	require.NotEmpty(t, out.key, "no %s event", typ)
	return out
}

// inboxKey sends alice a new message and returns its key.
func inboxKey(t *testing.T, s *jwtServer) string {
	s.must(t, "user:alice", "POST", "/_electric/entities/vault/v1/send",
		`{"type":"composer_input","payload":{"source":"another","nodes":[]}}`, http.StatusOK)
	return lastEvent(t, s, "inbox").key
}

func entityStatus(t *testing.T, s *jwtServer) string {
	out := s.must(t, "user:alice", "GET", "/_electric/entities/vault/v1", "", http.StatusOK)
	i := strings.Index(out, `"status":"`)
	require.GreaterOrEqual(t, i, 0, out)
	rest := out[i+len(`"status":"`):]
	return rest[:strings.Index(rest, `"`)]
}

// Quotas (finding 9): one principal cannot create without bound.
func TestQuotasPerPrincipal(t *testing.T) {
	key := testserver.NewJWTKey(t)
	srv := testserver.Start(t, testserver.Options{QuietLogs: true, Admins: []string{"service:ops"}, API: api.Config{Auth: key.Auth,
		Quotas: quotaLimits(2)}})
	s := &jwtServer{Server: srv, key: key}
	refused := func(status int, out string) {
		t.Helper()
		require.Equal(t, http.StatusTooManyRequests, status, out)
		require.Contains(t, out, "QUOTA_EXCEEDED")
	}
	retryAfter := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+s.token(t, "user:bob"))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
		require.Equal(t, "60", res.Header.Get("Retry-After"))
	}
	// types
	s.must(t, "user:bob", "POST", "/_electric/entity-types", `{"name":"t1","description":"d"}`, http.StatusCreated)
	s.must(t, "user:bob", "POST", "/_electric/entity-types", `{"name":"t2","description":"d"}`, http.StatusCreated)
	refused(s.call(t, "user:bob", "POST", "/_electric/entity-types", `{"name":"t3","description":"d"}`))
	retryAfter("POST", "/_electric/entity-types", `{"name":"t3","description":"d"}`)
	s.must(t, "user:bob", "POST", "/_electric/entity-types", `{"name":"t1","description":"again"}`, http.StatusCreated) // an update is no new type
	s.must(t, "user:alice", "POST", "/_electric/entity-types", `{"name":"a1","description":"d"}`, http.StatusCreated)   // others unaffected
	// plain streams
	s.must(t, "user:bob", "PUT", "/bob/s1", "", http.StatusCreated)
	s.must(t, "user:bob", "PUT", "/bob/s2", "", http.StatusCreated)
	refused(s.call(t, "user:bob", "PUT", "/bob/s3", ""))
	s.must(t, "user:bob", "PUT", "/bob/s1", "", http.StatusOK) // the same stream again is no new one
	s.must(t, "user:bob", "DELETE", "/bob/s2", "", http.StatusNoContent)
	s.must(t, "user:bob", "PUT", "/bob/s3", "", http.StatusCreated) // deleting frees a place
	// runners
	s.must(t, "user:bob", "POST", "/_electric/runners", `{"id":"r1"}`, http.StatusCreated)
	s.must(t, "user:bob", "POST", "/_electric/runners", `{"id":"r2"}`, http.StatusCreated)
	refused(s.call(t, "user:bob", "POST", "/_electric/runners", `{"id":"r3"}`))
	s.must(t, "user:bob", "POST", "/_electric/runners", `{"id":"r1"}`, http.StatusOK)
	// grants (bob's two types already gave him 4: spawn and manage on each)
	refused(s.call(t, "user:bob", "POST", "/_electric/stream-grants?stream=/bob/s1",
		`{"subject_kind":"principal","subject_value":"user:eve","permission":"read"}`))
	// subscriptions (admins' too: only the server's own principals are exempt)
	for _, id := range []string{"s1", "s2"} {
		s.must(t, "service:ops", "PUT", "/__ds/subscriptions/"+id, `{"type":"pull-wake","pattern":"/q/*","wake_stream":"/w-`+id+`"}`, http.StatusCreated)
	}
	refused(s.call(t, "service:ops", "PUT", "/__ds/subscriptions/s3", `{"type":"pull-wake","pattern":"/q/*","wake_stream":"/w-s3"}`))
	s.must(t, "service:ops", "PUT", "/__ds/subscriptions/s1", `{"type":"pull-wake","pattern":"/q/*","wake_stream":"/w-s1"}`, http.StatusOK)
	// tags per entity
	s.must(t, "user:alice", "PUT", "/_electric/entities/a1/x", `{"tags":{"a":"1","b":"2"}}`, http.StatusCreated)
	refused(s.call(t, "user:alice", "POST", "/_electric/entities/a1/x/tags/c", `{"value":"3"}`))
	s.must(t, "user:alice", "POST", "/_electric/entities/a1/x/tags/a", `{"value":"changed"}`, http.StatusOK)
	refused(s.call(t, "user:alice", "PUT", "/_electric/entities/a1/y", `{"tags":{"a":"1","b":"2","c":"3"}}`))
}

func quotaLimits(n int) quota.Limits {
	return quota.Limits{Types: n, Runners: n, Subscriptions: n, Grants: n, Streams: n, TagsPerEntity: n}
}

// TestAStreamReplacedThroughAnotherReplicaIsDecidedAgain: two server processes on one
// database; a stream alice appended to through A (whose cache now knows it) is deleted
// and taken by bob through B. alice's next append through A is decided about bob's
// stream, and refused.
func TestAStreamReplacedThroughAnotherReplicaIsDecidedAgain(t *testing.T) {
	key := testserver.NewJWTKey(t)
	a := &jwtServer{Server: testserver.Start(t, testserver.Options{QuietLogs: true, API: api.Config{Auth: key.Auth}}), key: key}
	b := &jwtServer{Server: testserver.Start(t, testserver.Options{QuietLogs: true, DBURL: a.DBURL, API: api.Config{Auth: key.Auth}}), key: key}
	a.must(t, "user:alice", "PUT", "/shared/x", `[]`, http.StatusCreated)
	a.must(t, "user:alice", "POST", "/shared/x", `[{"n":1}]`, http.StatusNoContent)
	b.must(t, "user:alice", "DELETE", "/shared/x", "", http.StatusNoContent)
	b.must(t, "user:bob", "PUT", "/shared/x", `[]`, http.StatusCreated)
	a.must(t, "user:alice", "POST", "/shared/x", `[{"n":2}]`, http.StatusForbidden)
	require.Equal(t, "[]", b.must(t, "user:bob", "GET", "/shared/x?offset=-1", "", http.StatusOK))
	a.must(t, "user:bob", "POST", "/shared/x", `[{"n":3}]`, http.StatusNoContent)
}
