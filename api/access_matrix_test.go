package api_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
)

// jwtServer is a test server in jwt mode with a key the test signs tokens with.
type jwtServer struct {
	*testserver.Server
	key *testserver.JWTKey
}

func startJWT(t *testing.T, admins ...string) *jwtServer {
	t.Helper()
	key := testserver.NewJWTKey(t)
	srv := testserver.Start(t, testserver.Options{API: api.Config{Auth: key.Auth}, Admins: admins})
	return &jwtServer{Server: srv, key: key}
}

// token is a valid token for principal sub ("" for none).
func (s *jwtServer) token(t *testing.T, sub string) string {
	if sub == "" {
		return ""
	}
	return s.key.Token(t, sub)
}

// call makes a request as sub with a JSON body, and returns the status and body.
func (s *jwtServer) call(t *testing.T, sub, method, path, body string) (int, string) {
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
	if tok := s.token(t, sub); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	if res.Header.Get("Content-Type") == "text/event-stream" {
		return res.StatusCode, "" // a live feed: its answer is its status
	}
	data, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return res.StatusCode, string(data)
}

func (s *jwtServer) must(t *testing.T, sub, method, path, body string, want int) string {
	t.Helper()
	status, out := s.call(t, sub, method, path, body)
	require.Equal(t, want, status, "%s %s as %q: %s", method, path, sub, out)
	return out
}

var matrixPermissions = []string{"read", "write", "delete", "signal", "fork", "schedule", "spawn", "manage"}

// otherPermission is a permission that is not p (for "grantee with another permission").
func otherPermission(p string) string {
	if p == "read" {
		return "write"
	}
	return "read"
}

// TestAuthorisationMatrix walks every route the server serves and checks each against
// every kind of caller: anonymous, the creator, a grantee with the route's permission,
// a grantee with another permission, a stranger, a grantee whose grant expired, and an
// admin. The expectations come from the route's rule; a route without a rule fails.
func TestAuthorisationMatrix(t *testing.T) {
	s := startJWT(t, "service:ops")
	const creator = "user:carol"

	// carol registers a type (she gets spawn and manage on it), spawns an entity, and
	// registers a runner; grants go to one grantee per permission, and expiring ones to
	// another set.
	s.must(t, creator, "POST", "/_electric/entity-types", `{"name":"doc","description":"d"}`, http.StatusCreated)
	s.must(t, creator, "PUT", "/_electric/entities/doc/d1", `{}`, http.StatusCreated)
	s.must(t, creator, "POST", "/_electric/runners", `{"id":"r1"}`, http.StatusCreated)
	expires := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	for _, p := range matrixPermissions {
		s.must(t, creator, "POST", "/_electric/entities/doc/d1/grants",
			`{"subject_kind":"principal","subject_value":"user:g-`+p+`","permission":"`+p+`"}`, http.StatusCreated)
		s.must(t, creator, "POST", "/_electric/entities/doc/d1/grants",
			`{"subject_kind":"principal","subject_value":"user:x-`+p+`","permission":"`+p+`","expires_at":"`+expires+`"}`, http.StatusCreated)
		if p == "spawn" || p == "manage" {
			s.must(t, creator, "POST", "/_electric/entity-types/doc/grants",
				`{"subject_kind":"principal","subject_value":"user:g-`+p+`","permission":"`+p+`"}`, http.StatusCreated)
			s.must(t, creator, "POST", "/_electric/entity-types/doc/grants",
				`{"subject_kind":"principal","subject_value":"user:x-`+p+`","permission":"`+p+`","expires_at":"`+expires+`"}`, http.StatusCreated)
		}
	}

	routes, err := s.API.AccessRules()
	require.NoError(t, err)
	var cases []matrixCase
	for _, ra := range routes {
		require.NotEmpty(t, ra.Kind, "route %s %s has no access rule", ra.Method, ra.Pattern)
		if ra.Method == http.MethodOptions || ra.Method == http.MethodConnect || ra.Method == http.MethodTrace {
			continue
		}
		// the rule must be the one the specification gives the route (written down
		// here, independently of the server's table)
		want, ok := specAccess[ra.Method+" "+strings.TrimSuffix(ra.Pattern, "/")]
		if !ok && ra.Kind == "stream" {
			want, ok = "stream", true
		}
		require.True(t, ok, "route %s %s is not in the test's specification table", ra.Method, ra.Pattern)
		got := ra.Kind
		if ra.Permission != "" {
			got += ":" + ra.Permission
		}
		require.Equal(t, want, got, "rule of %s %s", ra.Method, ra.Pattern)
		if ra.Kind == "stream" {
			continue // by path: TestStreamAccess
		}
		cases = append(cases, matrixCase{RouteAccess: ra, path: concretePath(ra.Pattern)})
	}
	// destructive routes last, so that they do not change what the others see
	slices.SortStableFunc(cases, func(a, b matrixCase) int {
		return boolInt(a.Method == http.MethodDelete) - boolInt(b.Method == http.MethodDelete)
	})
	require.Greater(t, len(cases), 40)

	denied := func(c matrixCase, who string) {
		t.Helper()
		status, body := s.call(t, who, c.Method, c.path, "{}")
		want := http.StatusUnauthorized
		if c.Kind == "admin" && who != "" {
			want = http.StatusForbidden
		}
		require.Equal(t, want, status, "%s %s (%s %s) as %q must be refused: %s", c.Method, c.path, c.Kind, c.Permission, who, body)
	}
	allowed := func(c matrixCase, who string) {
		t.Helper()
		status, body := s.call(t, who, c.Method, c.path, "{}")
		require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, status,
			"%s %s (%s %s) as %q must be let through: %s", c.Method, c.path, c.Kind, c.Permission, who, body)
		require.Less(t, status, 500, "%s %s as %q: %s", c.Method, c.path, who, body)
	}
	checked := 0
	// refusals first (they change nothing), then the callers who may
	for _, c := range cases {
		switch c.Kind {
		case "public", "token":
			continue
		}
		denied(c, "")
		checked++
		switch c.Kind {
		case "admin":
			for _, who := range []string{creator, "user:sam", "user:g-manage"} {
				denied(c, who)
				checked++
			}
		case "entity", "type", "spawn":
			for _, who := range []string{"user:sam", "user:g-" + otherPermission(c.Permission)} {
				denied(c, who)
				checked++
			}
		}
	}
	// expired grants: wait for the clock to pass them (the grants are real rows; the
	// check compares with now())
	testwait.Until(t, "the read to be allowed", func() bool {
		status, _ := s.call(t, "user:x-read", "GET", "/_electric/entities/doc/d1", "")
		return status == http.StatusUnauthorized
	}, 15*time.Second)
	for _, c := range cases {
		if c.Kind == "entity" || c.Kind == "type" || c.Kind == "spawn" {
			denied(c, "user:x-"+c.Permission)
			checked++
		}
	}
	for _, c := range cases {
		switch c.Kind {
		case "public":
			allowed(c, "")
			checked++
		case "principal":
			// authenticated is enough to reach the handler, which may check more (a
			// runner's owner: 403 to others)
			status, body := s.call(t, "user:sam", c.Method, c.path, "{}")
			require.NotEqual(t, http.StatusUnauthorized, status, "%s %s as user:sam: %s", c.Method, c.path, body)
			require.Less(t, status, 500, "%s %s as user:sam: %s", c.Method, c.path, body)
			checked++
		case "entity", "type", "spawn":
			allowed(c, "user:g-"+c.Permission)
			checked++
		case "register":
			allowed(c, "user:sam")
			checked++
		case "admin":
			allowed(c, "service:ops")
			checked++
		}
	}
	for _, c := range cases {
		switch c.Kind {
		case "entity", "type", "spawn", "principal":
			allowed(c, creator)
			checked++
		}
	}
	t.Logf("authorisation matrix: %d routes, %d checks", len(cases), checked)
}

// specAccess is what each route needs, from the specification (§1.3, §1.4, §3, §6):
// "entity:<perm>" on the entity in the path, "type:<perm>" on the type, "spawn:spawn"
// (type spawn), "register" (new type: anyone; existing: manage), "principal" (any
// authenticated caller; the handler may check more), "admin" (privileged principals),
// "token" (a claim, callback or write token), "public".
var specAccess = func() map[string]string {
	m := map[string]string{
		"GET /_electric/health":                                         "public",
		"GET /_electric/ready":                                          "public",
		"GET /_electric/metrics":                                        "admin",
		"GET /_electric/entity-types":                                   "principal",
		"POST /_electric/entity-types":                                  "register",
		"GET /_electric/entity-types/{name}":                            "type:spawn",
		"DELETE /_electric/entity-types/{name}":                         "type:manage",
		"PATCH /_electric/entity-types/{name}/schemas":                  "type:manage",
		"GET /_electric/entity-types/{name}/grants":                     "type:manage",
		"POST /_electric/entity-types/{name}/grants":                    "type:manage",
		"DELETE /_electric/entity-types/{name}/grants/{grantId}":        "type:manage",
		"GET /_electric/entities":                                       "principal",
		"PUT /_electric/entities/{type}/{id}":                           "spawn:spawn",
		"GET /_electric/entities/{type}/{id}":                           "entity:read",
		"HEAD /_electric/entities/{type}/{id}":                          "entity:read",
		"PUT /_electric/entities/{type}/{id}/schedules/{scheduleId}":    "entity:schedule",
		"DELETE /_electric/entities/{type}/{id}/schedules/{scheduleId}": "entity:schedule",
		"POST /_electric/observations/cron/ensure-stream":               "principal",
		"POST /_electric/observations/entities/ensure-stream":           "principal",
		"DELETE /_electric/entities/{type}/{id}":                        "entity:delete",
		"POST /_electric/entities/{type}/{id}/send":                     "entity:write",
		"POST /_electric/entities/{type}/{id}/signal":                   "entity:signal",
		"POST /_electric/entities/{type}/{id}/fork":                     "entity:fork",
		"PATCH /_electric/entities/{type}/{id}/inbox/{messageKey}":      "entity:write",
		"DELETE /_electric/entities/{type}/{id}/inbox/{messageKey}":     "entity:write",
		"POST /_electric/entities/{type}/{id}/tags/{tagKey}":            "entity:write",
		"DELETE /_electric/entities/{type}/{id}/tags/{tagKey}":          "entity:write",
		"GET /_electric/entities/{type}/{id}/wake":                      "entity:read",
		"GET /_electric/entities/{type}/{id}/slash-commands":            "entity:read",
		"GET /_electric/entities/{type}/{id}/mcp":                       "entity:read",
		"POST /_electric/entities/{type}/{id}/mcp":                      "entity:read",
		"DELETE /_electric/entities/{type}/{id}/mcp":                    "entity:read",
		"PUT /_electric/entities/{type}/{id}/slash-commands/{name}":     "entity:write",
		"DELETE /_electric/entities/{type}/{id}/slash-commands/{name}":  "entity:write",
		// §1.3: attachments (write to upload and delete, read to download) and
		// externally writable collections (write, then the type's allow-list)
		"POST /_electric/entities/{type}/{id}/attachments":              "entity:write",
		"GET /_electric/entities/{type}/{id}/attachments/{attId}":       "entity:read",
		"DELETE /_electric/entities/{type}/{id}/attachments/{attId}":    "entity:write",
		"POST /_electric/entities/{type}/{id}/collections/{collection}": "entity:write",
		"GET /_electric/entities/{type}/{id}/grants":                    "entity:manage",
		"POST /_electric/entities/{type}/{id}/grants":                   "entity:manage",
		"DELETE /_electric/entities/{type}/{id}/grants/{grantId}":       "entity:manage",
		"POST /_electric/wake-callbacks/{consumerId}":                   "token",
		"POST /_electric/runners":                                       "principal",
		"GET /_electric/runners":                                        "principal",
		"GET /_electric/runners/{id}":                                   "principal",
		"GET /_electric/runners/{id}/health":                            "principal",
		"POST /_electric/runners/{id}/heartbeat":                        "principal",
		"POST /_electric/runners/{id}/enable":                           "principal",
		"POST /_electric/runners/{id}/disable":                          "principal",
		"POST /_electric/runners/{id}/claim":                            "principal",
		"GET /_electric/electric/v1/shape":                              "principal",
		"GET /_electric/stream-grants":                                  "principal",
		"POST /_electric/stream-grants":                                 "principal",
		"DELETE /_electric/stream-grants/{grantId}":                     "principal",
		"GET /_electric/feed":                                           "principal",
		"POST /_electric/feed/{session}/requests":                       "principal",
		"DELETE /_electric/feed/{session}/requests/{id}":                "principal",
		"GET /_electric/console":                                        "public",
		"HEAD /_electric/console":                                       "public",
		"GET /_electric/console/*":                                      "public",
		"HEAD /_electric/console/*":                                     "public",
		"POST /_electric/wake":                                          "principal",
		"POST /_electric/wake/unregister":                               "principal",
		// webhook sources (issue 29): sources are any principal's own (the handler checks
		// readers and the owner); a delivery's signature is its credential
		"GET /_electric/webhook-sources":                                            "principal",
		"POST /_electric/webhook-sources":                                           "principal",
		"GET /_electric/webhook-sources/{webhookKey}":                               "principal",
		"DELETE /_electric/webhook-sources/{webhookKey}":                            "principal",
		"POST /_electric/webhook-deliveries/{endpointKey}":                          "token",
		"POST /_electric/webhook-deliveries/{endpointKey}/*":                        "token",
		"PUT /_electric/entities/{type}/{id}/webhook-source-subscriptions/{sid}":    "entity:write",
		"DELETE /_electric/entities/{type}/{id}/webhook-source-subscriptions/{sid}": "entity:write",
		// pgSync observations (issue 29)
		"POST /_electric/pg-sync/register":                                        "principal",
		"DELETE /_electric/entities/{type}/{id}/pg-sync-observations/{sourceRef}": "entity:write",
	}
	for _, prefix := range []string{"/__ds", "/v1/stream/__ds"} {
		for k, v := range map[string]string{
			"GET /jwks.json": "public", "HEAD /jwks.json": "public",
			"PUT /subscriptions/{id}": "admin", "GET /subscriptions/{id}": "admin",
			"DELETE /subscriptions/{id}": "admin", "POST /subscriptions/{id}/streams": "admin",
			"DELETE /subscriptions/{id}/streams/*": "admin", "POST /subscriptions/{id}/claim": "admin",
			"POST /subscriptions/{id}/callback": "token", "POST /subscriptions/{id}/ack": "token",
			"POST /subscriptions/{id}/release": "token",
		} {
			method, path, _ := strings.Cut(k, " ")
			m[method+" "+prefix+path] = v
		}
	}
	return m
}()

type matrixCase struct {
	api.RouteAccess
	path string
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// concretePath fills a route pattern's parameters with the fixtures of the matrix.
func concretePath(pattern string) string {
	p := strings.TrimSuffix(pattern, "/*")
	byParam := map[string]string{"{type}": "doc", "{name}": "doc", "{messageKey}": "m1", "{tagKey}": "k1",
		"{grantId}": "g_missing", "{consumerId}": "c1", "{webhookKey}": "hook1", "{endpointKey}": "hook1", "{sid}": "s1",
		"{attId}": "a1", "{collection}": "comments",
		"{sourceRef}": "0123abcd"}
	switch {
	case strings.HasPrefix(p, "/_electric/entities/"):
		byParam["{id}"] = "d1"
		byParam["{name}"] = "cmd"
	case strings.HasPrefix(p, "/_electric/runners/"):
		byParam["{id}"] = "r1"
	default:
		byParam["{id}"] = "sub1"
	}
	for k, v := range byParam {
		p = strings.ReplaceAll(p, k, v)
	}
	if strings.HasSuffix(pattern, "/*") {
		p += "/doc/d1/main"
	}
	if strings.Contains(p, "/v1/shape") {
		p += "?table=entities&offset=-1"
	}
	return p
}

// TestStreamAccess: an entity's streams are read with read permission and written with
// its write token; a plain stream is its creator's, shared by stream grants.
func TestStreamAccess(t *testing.T) {
	s := startJWT(t)
	s.must(t, "user:carol", "POST", "/_electric/entity-types", `{"name":"doc","description":"d"}`, http.StatusCreated)
	s.must(t, "user:carol", "PUT", "/_electric/entities/doc/d1", `{}`, http.StatusCreated)
	s.must(t, "user:carol", "POST", "/_electric/entities/doc/d1/grants",
		`{"subject_kind":"principal","subject_value":"user:rita","permission":"read"}`, http.StatusCreated)
	s.must(t, "user:carol", "POST", "/_electric/entities/doc/d1/grants",
		`{"subject_kind":"principal","subject_value":"user:will","permission":"write"}`, http.StatusCreated)
	for _, path := range []string{"/doc/d1/main", "/doc/d1/main?offset=-1", "/v1/stream/doc/d1/main", "/doc/d1/slash-commands"} {
		for who, want := range map[string]int{"": 401, "user:sam": 403, "user:will": 403, "user:rita": 200, "user:carol": 200} {
			status, body := s.call(t, who, "GET", path, "")
			require.Equal(t, want, status, "GET %s as %q: %s", path, who, body)
		}
	}
	// a plain stream belongs to its creator; grants share it
	s.must(t, "", "PUT", "/notes/a", "", http.StatusUnauthorized)
	s.must(t, "user:sam", "PUT", "/notes/a", "", http.StatusCreated)
	s.must(t, "", "GET", "/notes/a", "", http.StatusUnauthorized)
	s.must(t, "user:sam", "GET", "/notes/a?offset=-1", "", http.StatusOK)
	s.must(t, "user:rita", "GET", "/notes/a?offset=-1", "", http.StatusForbidden)
	s.must(t, "user:sam", "POST", "/_electric/stream-grants?stream=/notes/a",
		`{"subject_kind":"principal","subject_value":"user:rita","permission":"read"}`, http.StatusCreated)
	s.must(t, "user:rita", "GET", "/notes/a?offset=-1", "", http.StatusOK)
	s.must(t, "user:rita", "POST", "/notes/a", `{"x":1}`, http.StatusForbidden)
	// an entity stream's appends take its write token, never a principal's token
	status, body := s.call(t, "user:carol", "POST", "/doc/d1/main", `{"type":"x","key":"k","value":1,"headers":{"operation":"insert"}}`)
	require.Equal(t, http.StatusUnauthorized, status, body)
	require.Contains(t, body, "write token")
	// lists show only what the caller may see
	out := s.must(t, "user:sam", "GET", "/_electric/entities", "", http.StatusOK)
	require.Equal(t, "[]", strings.TrimSpace(out))
	out = s.must(t, "user:rita", "GET", "/_electric/entities", "", http.StatusOK)
	require.Contains(t, out, `"/doc/d1"`)
	require.Equal(t, "[]", strings.TrimSpace(s.must(t, "user:sam", "GET", "/_electric/entity-types", "", http.StatusOK)))
	require.Contains(t, s.must(t, "user:carol", "GET", "/_electric/entity-types", "", http.StatusOK), `"doc"`)
}
