package api_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPrincipalEntityIsolation (jwt mode): a principal entity is its principal's. Another
// principal gets the same refusal whether it exists yet or not — on every entity route
// (walked from the router, so new routes are covered) and on its streams — so nobody
// learns whether a principal has used the server, and nothing they do makes or changes
// it. Its principal and privileged principals reach it; anonymous callers get 401; the
// principal in a token is the only one (an Electric-Principal header is not).
func TestPrincipalEntityIsolation(t *testing.T) {
	s := startJWT(t, "service:ops")
	const carol, sam = "user:carol", "user:sam"
	const carolURL = "/principal/user%3Acarol"
	rows := func() int {
		var n int
		require.NoError(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM entities WHERE url = $1`, carolURL).Scan(&n))
		return n
	}
	// sam's own type and entity, for the routes that name an entity in their body
	s.must(t, sam, "POST", "/_electric/entity-types", `{"name":"pad","description":"d"}`, http.StatusCreated)
	s.must(t, sam, "PUT", "/_electric/entities/pad/p0", `{}`, http.StatusCreated)
	routes, err := s.API.AccessRules()
	require.NoError(t, err)
	type probe struct{ method, path string }
	var probes []probe
	for _, ra := range routes {
		if ra.Kind != "entity" {
			continue
		}
		p := strings.NewReplacer("{type}", "principal", "{id}", "user:carol", "{messageKey}", "m1", "{tagKey}", "k1",
			"{grantId}", "g_missing", "{name}", "cmd", "{scheduleId}", "s1", "{attId}", "a1", "{collection}", "comments",
			"{sid}", "s1", "{sourceRef}", "ab").Replace(ra.Pattern)
		require.NotContains(t, p, "{", "a parameter the test does not fill: %s", ra.Pattern)
		probes = append(probes, probe{ra.Method, p})
	}
	require.Greater(t, len(probes), 15)
	streamProbes := []probe{{"GET", "/principal/user:carol/main?offset=-1"}, {"GET", "/principal/user%3Acarol/main?offset=-1"},
		{"HEAD", "/principal/user:carol/main"}, {"POST", "/principal/user:carol/main"}, {"DELETE", "/principal/user:carol/main"},
		{"GET", "/v1/stream/principal/user:carol/main?offset=-1"}}
	// routes naming carol's entity in a body or header
	named := []struct{ method, path, body, owner string }{
		{"PUT", "/_electric/entities/pad/kid", `{"parent":"` + carolURL + `"}`, ""},
		{"POST", "/_electric/wake", `{"subscriberUrl":"/pad/p0","sourceUrl":"` + carolURL + `","condition":{"on":"change"}}`, ""},
		{"POST", "/_electric/wake", `{"subscriberUrl":"` + carolURL + `","sourceUrl":"/pad/p0","condition":{"on":"change"}}`, ""},
		{"PUT", "/_electric/entities/pad/p0/schedules/f1", `{"scheduleType":"future_send","payload":1,"fireAt":"` + time.Now().Add(30*24*time.Hour).UTC().Format(time.RFC3339) + `","targetUrl":"` + carolURL + `"}`, ""},
		{"PUT", "/_electric/shared-state/iso", `[]`, carolURL},
	}
	answers := func(who string) map[probe]string {
		out := map[probe]string{}
		for i, n := range named {
			req, err := http.NewRequest(n.method, s.URL+n.path, strings.NewReader(n.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if who != "" {
				req.Header.Set("Authorization", "Bearer "+s.token(t, who))
			}
			if n.owner != "" {
				req.Header.Set("Electric-Owner-Entity", n.owner)
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			data, _ := io.ReadAll(res.Body)
			res.Body.Close()
			out[probe{n.method, n.path + "#" + strconv.Itoa(i)}] = http.StatusText(res.StatusCode) + " " + string(data)
		}
		for _, p := range append(append([]probe{}, probes...), streamProbes...) {
			body := "{}"
			if p.method == "POST" && strings.HasPrefix(p.path, "/principal/") {
				body = `{"type":"x","key":"k","value":{},"headers":{"operation":"insert"}}`
			}
			status, out1 := s.call(t, who, p.method, p.path, body)
			out[p] = http.StatusText(status) + " " + out1
		}
		return out
	}

	// before carol ever came: sam and anonymous are refused, and make nothing
	samBefore, anonBefore := answers(sam), answers("")
	for p, a := range samBefore {
		require.True(t, strings.HasPrefix(a, "Unauthorized") || strings.HasPrefix(a, "Forbidden") || strings.HasPrefix(a, "Method Not Allowed"),
			"%s %s as sam: %s", p.method, p.path, a)
	}
	for p, a := range anonBefore {
		require.True(t, strings.HasPrefix(a, "Unauthorized"), "%s %s anonymous: %s", p.method, p.path, a)
	}
	require.Zero(t, rows(), "nobody but carol (or a privileged principal) makes her entity")

	// carol comes: her entity is made on her first GET; she reads it and its stream
	require.Contains(t, s.must(t, carol, "GET", "/_electric/entities/principal/user:carol", "", http.StatusOK), `"created_by":"`+carolURL+`"`)
	require.Equal(t, 1, rows())
	s.must(t, carol, "GET", "/principal/user:carol/main?offset=-1", "", http.StatusOK)
	// sam's answers are exactly what they were: he cannot tell
	samAfter := answers(sam)
	for p, a := range samBefore {
		require.Equal(t, a, samAfter[p], "%s %s as sam, before and after carol's entity existed", p.method, p.path)
	}
	require.Equal(t, anonBefore, answers(""))
	// nor does a list show it to him, under any filter
	require.Equal(t, []string{"/principal/user%3Asam", "/pad/p0"}, urlsOf(t, s.must(t, sam, "GET", "/_electric/entities", "", http.StatusOK)))
	require.Equal(t, []string{}, urlsOf(t, s.must(t, sam, "GET", "/_electric/entities?created_by=user:carol", "", http.StatusOK)))
	require.Equal(t, []string{"/principal/user%3Asam"}, urlsOf(t, s.must(t, sam, "GET", "/_electric/entities?type=principal", "", http.StatusOK)))
	require.Equal(t, []string{carolURL}, urlsOf(t, s.must(t, carol, "GET", "/_electric/entities?type=principal", "", http.StatusOK)))

	// sam cannot update carol's identity, nor can carol (not privileged); the admin can
	upd := `{"type":"update_identity","payload":{"identity":{"kind":"user","id":"carol","key":"user:carol","url":"` + carolURL + `","updated_at":"2026-11-27T00:00:00Z","email":"c@example.com"}}}`
	status, body := s.call(t, sam, "POST", "/_electric/entities/principal/user:carol/send", upd)
	require.Equal(t, http.StatusUnauthorized, status, body)
	status, body = s.call(t, carol, "POST", "/_electric/entities/principal/user:carol/send", upd)
	require.Equal(t, http.StatusForbidden, status, body)
	require.Contains(t, body, "Only system principals can update a principal's identity")
	s.must(t, "service:ops", "POST", "/_electric/entities/principal/user:carol/send", upd, http.StatusOK)
	require.Contains(t, s.must(t, carol, "GET", "/principal/user:carol/main?offset=-1", "", http.StatusOK), `"email":"c@example.com"`)

	// an admin reaching a principal's entity makes it, as the principal would
	s.must(t, "service:ops", "GET", "/_electric/entities/principal/user:dora", "", http.StatusOK)

	// in jwt mode the header names nobody: sam sending "as carol" is sam
	req, err := http.NewRequest("PUT", s.URL+"/_electric/entities/pad/p1", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token(t, sam))
	req.Header.Set("Electric-Principal", carol)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode)
	out := s.must(t, sam, "GET", "/_electric/entities/pad/p1", "", http.StatusOK)
	require.Contains(t, out, `"created_by":"/principal/user%3Asam"`)
	require.Equal(t, []string{"/principal/user%3Asam", "/pad/p0", "/pad/p1"}, urlsOf(t, s.must(t, sam, "GET", "/_electric/entities?created_by=user:sam", "", http.StatusOK)))
	require.Equal(t, samAfter, answers(sam), "sam's own entities changed nothing he sees of carol's")
}
