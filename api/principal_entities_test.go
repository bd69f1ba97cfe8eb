package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	adaURL     = "/principal/user%3Aada"
	adaEntity  = entitiesPath + "/principal/user:ada"
	asAda      = "Electric-Principal"
	adaKey     = "user:ada"
	identityOK = `{"kind":"user","id":"ada","key":"user:ada","url":"/principal/user%3Aada","updated_at":"2026-11-27T00:00:00Z","display_name":"Ada L."}`
)

// principalRows counts the principal entities in the database (without asking the API,
// which would make one).
func (h *harness) principalRows(url string) int {
	h.t.Helper()
	var n int
	require.NoError(h.t, h.srv.Pool.QueryRow(context.Background(), `SELECT count(*) FROM entities WHERE url = $1`, url).Scan(&n))
	return n
}

// TestPrincipalTypeAtStartup: the built-in principal type exists before any request,
// with the update_identity message and the identity event.
func TestPrincipalTypeAtStartup(t *testing.T) {
	h := setup(t)
	r := h.do(http.MethodGet, typesPath+"/principal", nil)
	requireStatus(t, r, http.StatusOK)
	o := r.object(t)
	require.Equal(t, `"built-in principal entity"`, string(o["description"]))
	require.Contains(t, string(o["inbox_schemas"]), `"update_identity"`)
	require.Contains(t, string(o["state_schemas"]), `"identity"`)
	require.Equal(t, "1", string(o["revision"]))
}

// TestPrincipalEntityOnFirstUse: GET on /principal/<key> by that principal makes its
// entity (Electric's URL, its own creator, tags and args naming it, an identity event
// on its stream), under either spelling of the key; the stream is read at the path the
// entity names. Sends and spawns make the sender's entity once they are valid; a refused
// one makes nothing.
func TestPrincipalEntityOnFirstUse(t *testing.T) {
	h := setup(t)
	require.Zero(t, h.principalRows(adaURL))
	r := h.do(http.MethodGet, adaEntity, nil, asAda, adaKey)
	requireStatus(t, r, http.StatusOK)
	o := r.object(t)
	require.Equal(t, `"`+adaURL+`"`, string(o["url"]))
	require.Equal(t, `"principal"`, string(o["type"]))
	require.Equal(t, `"idle"`, string(o["status"]))
	require.Equal(t, `"`+adaURL+`"`, string(o["created_by"]))
	require.JSONEq(t, `{"main":"/principal/user:ada/main"}`, string(o["streams"]))
	require.JSONEq(t, `{"principal_kind":"user","principal_id":"ada"}`, string(o["tags"]))
	require.JSONEq(t, `{"kind":"user","id":"ada","key":"user:ada"}`, string(o["spawn_args"]))
	require.Equal(t, 1, h.principalRows(adaURL))

	// the encoded spelling names the same entity; HEAD too
	r = h.do(http.MethodGet, entitiesPath+adaURL, nil, asAda, adaKey)
	requireStatus(t, r, http.StatusOK)
	require.Equal(t, `"`+adaURL+`"`, string(r.object(t)["url"]))
	requireStatus(t, h.do(http.MethodHead, adaEntity, nil, asAda, adaKey), http.StatusOK)
	require.Equal(t, 1, h.principalRows(adaURL))

	// its stream: entity_created, then the identity, under both spellings of the path
	for _, path := range []string{"/principal/user:ada/main?offset=-1", "/principal/user%3Aada/main?offset=-1"} {
		r = h.do(http.MethodGet, path, nil, asAda, adaKey)
		requireStatus(t, r, http.StatusOK)
		evs := parseEvents(t, r.Body)
		require.Equal(t, []string{"entity_created", "identity"}, types(evs))
		require.Equal(t, "self", evs[1].Key)
		require.Equal(t, "insert", evs[1].Headers["operation"])
		for k, want := range map[string]string{"kind": "user", "id": "ada", "key": "user:ada", "url": adaURL} {
			require.Equal(t, `"`+want+`"`, string(evs[1].Value[k]), k)
		}
	}

	// a send makes the sender's principal entity (once valid)
	h.registerType(`{"name":"chat","description":"d","inbox_schemas":{"note":{"type":"object","required":["text"]}}}`)
	h.mustSpawn("chat", "c1", nil)
	requireStatus(t, h.do(http.MethodPost, entitiesPath+"/chat/c1/grants", `{"subject_kind":"principal_kind","subject_value":"user","permission":"write"}`), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPost, typesPath+"/chat/grants", `{"subject_kind":"principal_kind","subject_value":"user","permission":"spawn"}`), http.StatusCreated)
	const bobURL = "/principal/user%3Abob"
	r = h.send("/chat/c1", `{"type":"note","payload":{}}`, asAda, "user:bob")
	requireStatus(t, r, http.StatusUnprocessableEntity)
	require.Zero(t, h.principalRows(bobURL), "a refused send makes nothing")
	h.mustSend("/chat/c1", `{"type":"note","payload":{"text":"hi"}}`, asAda, "user:bob")
	require.Equal(t, 1, h.principalRows(bobURL))
	var inbox event
	for _, e := range h.events("/chat/c1") {
		if e.Type == "inbox" {
			inbox = e
		}
	}
	require.Equal(t, `"`+bobURL+`"`, string(inbox.Value["from"]), "the sender's from is its principal entity's URL")
	h.mustSend("/chat/c1", `{"type":"note","payload":{"text":"again"}}`, asAda, "user:bob")
	require.Equal(t, 1, h.principalRows(bobURL))

	// a spawn makes the creator's (a refused one makes nothing)
	const danURL = "/principal/user%3Adan"
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/chat/c1", `{}`, asAda, "user:dan"), http.StatusConflict)
	require.Zero(t, h.principalRows(danURL))
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/chat/d1", `{}`, asAda, "user:dan"), http.StatusCreated)
	require.Equal(t, 1, h.principalRows(danURL))

	// an invalid key is a 400
	requireError(t, h.do(http.MethodGet, entitiesPath+"/principal/nokind", nil), http.StatusBadRequest, "INVALID_REQUEST",
		"Invalid principal key: principal entities are /principal/<kind:id>, with kind user, agent, service or system")
	requireError(t, h.do(http.MethodGet, entitiesPath+"/principal/robot:x", nil), http.StatusBadRequest, "INVALID_REQUEST",
		"Invalid principal key: principal entities are /principal/<kind:id>, with kind user, agent, service or system")
	requireError(t, h.do(http.MethodGet, entitiesPath+"/principal/user:a%2Fb", nil), http.StatusBadRequest, "INVALID_REQUEST",
		"A principal whose id contains '/' has no principal entity")
}

// TestPrincipalEntityMutationsRefused: what only the server changes of a principal
// entity answers 400 INVALID_REQUEST, to its own principal and to a system principal,
// and changes nothing; the built-in type cannot be spawned, registered, amended or
// deleted.
func TestPrincipalEntityMutationsRefused(t *testing.T) {
	h := setup(t)
	requireStatus(t, h.do(http.MethodGet, adaEntity, nil, asAda, adaKey), http.StatusOK)
	before := types(h.events(adaURL))
	for _, who := range []string{adaKey, "system:dev-local"} {
		for _, c := range []struct{ method, path, body, msg string }{
			{"DELETE", adaEntity, "", "Principal entities are built in and cannot be killed"},
			{"POST", adaEntity + "/signal", `{"signal":"SIGSTOP"}`, "Principal entities are built in and cannot be signaled"},
			{"POST", adaEntity + "/signal", `{"signal":"SIGKILL"}`, "Principal entities are built in and cannot be signaled"},
			{"POST", adaEntity + "/tags/team", `{"value":"x"}`, "Principal entities are built in and cannot be tagged"},
			{"DELETE", adaEntity + "/tags/principal_kind", "", "Principal entities are built in and cannot be tagged"},
			{"PUT", adaEntity + "/slash-commands/go", `{"description":"d"}`, "Principal entities are built in and cannot be given slash commands"},
			{"DELETE", adaEntity + "/slash-commands/go", "", "Principal entities are built in and cannot be given slash commands"},
			{"PUT", adaEntity + "/schedules/s1", `{"scheduleType":"cron","expression":"* * * * *","payload":1}`, "Principal entities are built in and cannot be scheduled"},
			{"DELETE", adaEntity + "/schedules/s1", "", "Principal entities are built in and cannot be scheduled"},
		} {
			var body any
			if c.body != "" {
				body = c.body
			}
			requireError(t, h.do(c.method, c.path, body, asAda, who), http.StatusBadRequest, "INVALID_REQUEST", c.msg)
		}
		requireError(t, h.do(http.MethodPut, entitiesPath+"/principal/user:zed", `{}`, asAda, who), http.StatusBadRequest,
			"INVALID_REQUEST", "principal entities cannot be spawned")
		requireError(t, h.do(http.MethodPost, typesPath, `{"name":"principal","description":"mine"}`, asAda, who), http.StatusBadRequest,
			"INVALID_REQUEST", `The entity type name "principal" is reserved`)
	}
	requireError(t, h.do(http.MethodDelete, typesPath+"/principal", nil), http.StatusBadRequest, "INVALID_REQUEST",
		`Entity type "principal" is built in and cannot be deleted`)
	requireError(t, h.do(http.MethodPatch, typesPath+"/principal/schemas", `{"inbox_schemas":{"x":{}}}`), http.StatusBadRequest,
		"INVALID_REQUEST", `Entity type "principal" is built in and cannot be amended`)
	// nothing changed
	r := h.do(http.MethodGet, adaEntity, nil, asAda, adaKey)
	requireStatus(t, r, http.StatusOK)
	require.Equal(t, `"idle"`, string(r.object(t)["status"]))
	require.JSONEq(t, `{"principal_kind":"user","principal_id":"ada"}`, string(r.object(t)["tags"]))
	require.Equal(t, before, types(h.events(adaURL)))
	require.Equal(t, 1, h.principalRows(adaURL))
	requireStatus(t, h.do(http.MethodGet, typesPath+"/principal", nil), http.StatusOK)
}

// TestPrincipalIdentityUpdate: update_identity to a principal entity is validated by the
// type's schema first (422), then accepted only from a privileged principal (403
// otherwise), must name that principal, and commits the new identity with the message
// (one txid); other message types are unknown to principal entities.
func TestPrincipalIdentityUpdate(t *testing.T) {
	h := setup(t)
	requireStatus(t, h.do(http.MethodGet, adaEntity, nil, asAda, adaKey), http.StatusOK)
	upd := `{"type":"update_identity","payload":{"identity":` + identityOK + `}}`

	requireError(t, h.send(adaURL, upd, asAda, adaKey), http.StatusForbidden, "UNAUTHORIZED",
		"Only system principals can update a principal's identity")
	r := h.send(adaURL, `{"type":"update_identity","payload":{"identity":{"kind":"user"}}}`, asAda, adaKey)
	e := requireError(t, r, http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED", "Validation failed")
	require.NotEmpty(t, e.Details)
	r = h.send(adaURL, `{"type":"update_identity","payload":{"identity":`+strings.Replace(identityOK, `"display_name"`, `"evil":1,"display_name"`, 1)+`}}`)
	requireError(t, r, http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED", "Validation failed")
	r = h.send(adaURL, `{"type":"update_identity","payload":{"identity":`+strings.ReplaceAll(identityOK, "ada", "eve")+`}}`)
	requireDetails(t, r, http.StatusUnprocessableEntity, "SCHEMA_VALIDATION_FAILED", "Validation failed",
		detail{Path: "/identity/id", Message: "must be ada, the principal this entity is"},
		detail{Path: "/identity/key", Message: "must be user:ada, the principal this entity is"},
		detail{Path: "/identity/url", Message: "must be /principal/user%3Aada, the principal this entity is"})
	requireError(t, h.send(adaURL, `{"type":"update_identity","afterMs":1000,"payload":{"identity":`+identityOK+`}}`),
		http.StatusBadRequest, "INVALID_REQUEST", "update_identity is applied at once: it cannot be sent later")
	h.registerType(`{"name":"clock","description":"d"}`)
	h.mustSpawn("clock", "c1", nil)
	requireError(t, h.do(http.MethodPut, entitiesPath+"/clock/c1/schedules/later", `{"scheduleType":"future_send","messageType":"update_identity",
		"targetUrl":"`+adaURL+`","fireAt":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`","payload":{"identity":`+identityOK+`}}`),
		http.StatusBadRequest, "INVALID_REQUEST", "update_identity is applied at once: it cannot be sent later")
	requireError(t, h.send(adaURL, `{"type":"note","payload":{}}`, asAda, adaKey), http.StatusUnprocessableEntity,
		"UNKNOWN_MESSAGE_TYPE", "Unknown message type: note")
	require.Equal(t, []string{"entity_created", "identity"}, types(h.events(adaURL)), "refused messages wrote nothing")

	txid := h.mustSend(adaURL, upd) // system:dev-local
	evs := h.events(adaURL)
	require.Equal(t, []string{"entity_created", "identity", "inbox", "identity"}, types(evs))
	require.Equal(t, txid, evs[2].Headers["txid"])
	require.Equal(t, txid, evs[3].Headers["txid"])
	require.Equal(t, "update", evs[3].Headers["operation"])
	require.Equal(t, `"Ada L."`, string(evs[3].Value["display_name"]))
	// the principal's own plain messages are its to send
	h.mustSend(adaURL, `{"payload":"note to self"}`, asAda, adaKey)
}

// TestCreatedByListFilter: ?created_by= keeps the entities a principal created (given
// as its URL or key), with the other filters and paging, and still only what the caller
// may read.
func TestCreatedByListFilter(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	requireStatus(t, h.do(http.MethodPost, typesPath+"/chat/grants", `{"subject_kind":"principal_kind","subject_value":"user","permission":"spawn"}`), http.StatusCreated)
	for _, s := range []struct{ who, id string }{{"user:ada", "a1"}, {"user:ada", "a2"}, {"user:bob", "b1"}, {"user:ada", "a3"}} {
		requireStatus(t, h.do(http.MethodPut, entitiesPath+"/chat/"+s.id, `{}`, asAda, s.who), http.StatusCreated)
	}
	list := func(query string, who ...string) []string {
		t.Helper()
		hdr := []string{}
		if len(who) > 0 {
			hdr = []string{asAda, who[0]}
		}
		r := h.do(http.MethodGet, entitiesPath+"?"+query, nil, hdr...)
		requireStatus(t, r, http.StatusOK)
		var es []struct {
			URL string `json:"url"`
		}
		r.decode(t, &es)
		out := []string{}
		for _, e := range es {
			out = append(out, e.URL)
		}
		return out
	}
	require.Equal(t, []string{adaURL, "/chat/a1", "/chat/a2", "/chat/a3"}, list("created_by="+adaURL))
	require.Equal(t, []string{adaURL, "/chat/a1", "/chat/a2", "/chat/a3"}, list("created_by=user:ada"))
	require.Equal(t, []string{adaURL, "/chat/a1", "/chat/a2", "/chat/a3"}, list("created_by=%2Fprincipal%2Fuser%253Aada"))
	require.Equal(t, []string{"/chat/a1", "/chat/a2", "/chat/a3"}, list("created_by=user:ada&type=chat"))
	require.Equal(t, []string{"/chat/b1"}, list("created_by=user:bob&type=chat"))
	require.Equal(t, []string{}, list("created_by=user:nobody"))
	require.Equal(t, []string{}, list("created_by=not-a-principal"))
	require.Equal(t, []string{}, list("created_by=user:ada&status=killed"))
	// paging within the filter
	r := h.do(http.MethodGet, entitiesPath+"?created_by=user:ada&type=chat&limit=2", nil)
	requireStatus(t, r, http.StatusOK)
	var page []struct {
		URL string `json:"url"`
	}
	r.decode(t, &page)
	require.Len(t, page, 2)
	require.Equal(t, []string{"/chat/a3"}, list("created_by=user:ada&type=chat&limit=2&after=/chat/a2"))
	// only what the caller may read: bob sees his own
	require.Equal(t, []string{}, list("created_by=user:ada", "user:bob"))
	require.Equal(t, []string{"/principal/user%3Abob", "/chat/b1"}, list("created_by=user:bob", "user:bob"))
	// bounded
	requireError(t, h.do(http.MethodGet, entitiesPath+"?created_by="+strings.Repeat("x", 2049), nil), http.StatusBadRequest,
		"INVALID_REQUEST", "created_by must be at most 2048 bytes")
}

// principalRoutesJSON is for decoding a list.
type listed []struct {
	URL string `json:"url"`
}

func urlsOf(t *testing.T, body string) []string {
	var l listed
	require.NoError(t, json.Unmarshal([]byte(body), &l), body)
	out := []string{}
	for _, e := range l {
		out = append(out, e.URL)
	}
	return out
}
