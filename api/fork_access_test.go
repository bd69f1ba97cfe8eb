package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestForkAccess: forking needs the fork permission (the creator has it); the copy
// belongs to whoever forked it, and no grant of the source comes along, so a principal
// without fork reads the source's history neither by forking nor through someone else's
// copy.
func TestForkAccess(t *testing.T) {
	s := startJWT(t)
	const alice, bob, rita, fay = "user:alice", "user:bob", "user:rita", "user:fay"
	s.must(t, alice, "POST", "/_electric/entity-types", `{"name":"doc","description":"d"}`, http.StatusCreated)
	s.must(t, alice, "PUT", "/_electric/entities/doc/d1", `{}`, http.StatusCreated)
	s.must(t, alice, "POST", "/_electric/entities/doc/d1/send", `{"payload":"secret"}`, http.StatusOK)
	for who, perm := range map[string]string{rita: "read", fay: "fork"} {
		s.must(t, alice, "POST", "/_electric/entities/doc/d1/grants",
			`{"subject_kind":"principal","subject_value":"`+who+`","permission":"`+perm+`"}`, http.StatusCreated)
	}

	// no fork permission: refused, nothing made
	for _, who := range []string{bob, rita, ""} {
		status, body := s.call(t, who, "POST", "/_electric/entities/doc/d1/fork", `{"instance_id":"by-`+who+`"}`)
		require.Equal(t, http.StatusUnauthorized, status, "%q: %s", who, body)
	}
	s.must(t, alice, "GET", "/_electric/entities/doc/by-user:bob", "", http.StatusNotFound)

	// alice's copy is hers: rita's read grant on the source does not reach it, bob has none
	out := s.must(t, alice, "POST", "/_electric/entities/doc/d1/fork", `{"instance_id":"a-copy"}`, http.StatusCreated)
	var res struct {
		Root map[string]json.RawMessage `json:"root"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, `"/principal/user%3Aalice"`, string(res.Root["created_by"]))
	s.must(t, alice, "GET", "/doc/a-copy/main?offset=-1", "", http.StatusOK)
	for _, who := range []string{bob, rita} {
		status, body := s.call(t, who, "GET", "/doc/a-copy/main?offset=-1", "")
		require.Equal(t, http.StatusForbidden, status, "%q reads alice's copy: %s", who, body)
		require.NotContains(t, body, "secret")
		status, _ = s.call(t, who, "GET", "/_electric/entities/doc/a-copy", "")
		require.Equal(t, http.StatusUnauthorized, status)
	}

	// fay holds fork: her copy is hers (its history is what she was allowed to copy)
	s.must(t, fay, "POST", "/_electric/entities/doc/d1/fork", `{"instance_id":"f-copy"}`, http.StatusCreated)
	require.Contains(t, s.must(t, fay, "GET", "/doc/f-copy/main?offset=-1", "", http.StatusOK), "secret")
	status, _ := s.call(t, fay, "GET", "/doc/d1/main?offset=-1", "")
	require.Equal(t, http.StatusForbidden, status, "fork is not read on the source")
	status, _ = s.call(t, bob, "GET", "/doc/f-copy/main?offset=-1", "")
	require.Equal(t, http.StatusForbidden, status)
	// a fork under a parent needs spawn on that parent
	status, body := s.call(t, fay, "POST", "/_electric/entities/doc/d1/fork", `{"parent":"/doc/d1"}`)
	require.Equal(t, http.StatusUnauthorized, status, body)
}
