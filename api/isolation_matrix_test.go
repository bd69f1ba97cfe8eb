package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/pgsync"
	"github.com/entityd/entityd/streamdb"
)

// The tenant-isolation matrix (issue 24): every way the router offers to reach a
// stream's bytes or to create, change or share a stream, tried by every kind of caller
// on every kind of stream, against answers written down here independently of the
// server's rules. TestIsolationMatrix walks the router: a route it cannot place in the
// matrix (or explicitly outside it, with a reason) fails the test, so a new route is
// classified before it ships. TestIsolationMatrixNoticesALoosenedRule loosens one rule
// in a running server and checks that the matrix fails.

// isolationCallers are the columns of every expectation, in order.
var isolationCallers = []string{
	"anonymous",        // no credentials
	"owner",            // user:alice, who created the streams, the entity and the runner
	"reader",           // user:rita: a read grant on the stream (plain) or the entity
	"writer",           // user:will: write
	"deleter",          // user:dora: delete
	"manager",          // user:max: manage
	"stranger",         // user:bob: nothing
	"admin",            // service:ops, a configured admin principal
	"write-token",      // Bearer: the entity's write token (not a principal)
	"bob-write-token",  // Bearer: the write token of bob's own entity
	"alice-look-alike", // a token whose subject is " user:alice" (refused, 401)
}

var isolationSubjects = map[string]string{"owner": "user:alice", "reader": "user:rita", "writer": "user:will",
	"deleter": "user:dora", "manager": "user:max", "stranger": "user:bob", "admin": "service:ops"}

// streamKinds are the rows: what is recorded about the stream decides.
//   - plain: alice's stream, shared by stream grants;
//   - public: alice's stream under the configured public prefix /pub;
//   - legacy: a plain stream with no recorded owner (created before owners were);
//   - main, collection: the streams of alice's entity /vault/v1 (entity grants);
//   - orphan: the main stream of an entity whose type was deleted;
//   - wake: alice's runner's wake stream;
//   - shared: shared state alice made for her entity /vault/v1 (its entity grants);
//   - cron: a cron stream (any principal reads it; the server writes it);
//   - members: alice's tag-membership stream (she reads it; the server writes it);
//   - webhook, webhook-public: the streams of alice's private and public webhook sources
//     (the source's readers read them; only verified deliveries are appended).
//   - attachment: a file alice uploaded to /vault/v1 (read under its entity's grants).
//   - pgsync: alice's pgSync observation of a table (she reads it; the server writes it);
//   - pgsync-entity: one naming her entity /vault/v1 as its observer (its readers read it).
//   - principal: the main stream of alice's principal entity /principal/user%3Aalice
//     (her grants; nobody holds a write token of it).
var streamKinds = []string{"plain", "public", "legacy", "main", "collection", "orphan", "wake", "shared", "cron", "members",
	"webhook", "webhook-public", "attachment", "pgsync", "pgsync-entity",
	"principal"}

// streamWays are the ways through the stream routes (* /* and its alias).
var streamWays = []string{"catch-up", "long-poll", "sse", "head", "fork", "fork-by-url", "append", "close", "delete",
	"recreate", "grants-list", "grants-add", "feed"}

// The live feed (package livefeed) runs a read with the caller's own credentials
// through the router: it meets exactly the catch-up read's decision. A caller who
// cannot open a session (no principal: anonymous, a write token, a look-alike) gets the
// session's 401, which is the catch-up's answer to them too.
func init() {
	for _, ways := range isolationExpected {
		ways["feed"] = ways["catch-up"]
	}
}

// isolationExpected: kind -> way -> one answer per caller (isolationCallers order).
// "ok" is any 2xx; a number is that status.
var isolationExpected = map[string]map[string]string{
	//             anon owner reader writer deleter manager stranger admin token bobtoken lookalike
	"plain": {
		"catch-up":    "401 ok  ok  403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  ok  403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  ok  403 403 403 403 ok  401 401 401",
		"head":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  ok  403 403 403 403 ok  401 401 401",
		"append":      "401 ok  403 ok  403 403 403 ok  401 401 401",
		"close":       "401 ok  403 ok  403 403 403 ok  401 401 401",
		"delete":      "401 ok  403 403 ok  403 403 ok  401 401 401",
		"recreate":    "401 ok  409 ok  409 409 409 ok  401 401 401",
		"grants-list": "401 ok  403 403 403 ok  403 ok  401 401 401",
		"grants-add":  "401 ok  403 403 403 ok  403 ok  401 401 401",
	},
	"public": {
		"catch-up":    "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"long-poll":   "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"sse":         "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"head":        "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"fork":        "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"fork-by-url": "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"append":      "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"close":       "401 ok  403 ok  403 403 403 ok  401 401 401",
		"delete":      "401 ok  403 403 ok  403 403 ok  401 401 401",
		"recreate":    "401 ok  409 ok  409 409 409 ok  401 401 401",
		"grants-list": "401 ok  403 403 403 ok  403 ok  401 401 401",
		"grants-add":  "401 ok  403 403 403 ok  403 ok  401 401 401",
	},
	"legacy": {
		"catch-up":    "401 403 403 403 403 403 403 ok  401 401 401",
		"long-poll":   "401 403 403 403 403 403 403 ok  401 401 401",
		"sse":         "401 403 403 403 403 403 403 ok  401 401 401",
		"head":        "401 403 403 403 403 403 403 ok  401 401 401",
		"fork":        "401 403 403 403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 403 403 403 403 403 403 ok  401 401 401",
		"append":      "401 403 403 403 403 403 403 ok  401 401 401",
		"close":       "401 403 403 403 403 403 403 ok  401 401 401",
		"delete":      "401 403 403 403 403 403 403 ok  401 401 401",
		"recreate":    "401 409 409 409 409 409 409 ok  401 401 401",
		"grants-list": "401 403 403 403 403 403 403 ok  401 401 401",
		"grants-add":  "401 403 403 403 403 403 403 ok  401 401 401",
	},
	// An entity's streams: read with the entity's read permission; appended to with its
	// write token only (a principal's token is not one: 401); never closed, deleted,
	// created or shared through the stream API.
	"main": {
		"catch-up":    "401 ok  ok  403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  ok  403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  ok  403 403 403 403 ok  401 401 401",
		"head":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  ok  403 403 403 403 ok  401 401 401",
		"append":      "401 401 401 401 401 401 401 401 ok  401 401",
		"close":       "401 401 401 401 401 401 401 401 403 401 401",
		"delete":      "401 405 405 405 405 405 405 405 401 401 401",
		"recreate":    "401 405 405 405 405 405 405 405 401 401 401",
		"grants-list": "401 400 400 400 400 400 400 400 401 401 401",
		"grants-add":  "401 400 400 400 400 400 400 400 401 401 401",
	},
	"collection": {
		"catch-up":    "401 ok  ok  403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  ok  403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  ok  403 403 403 403 ok  401 401 401",
		"head":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  ok  403 403 403 403 ok  401 401 401",
		"append":      "405 405 405 405 405 405 405 405 405 405 405",
		"close":       "405 405 405 405 405 405 405 405 405 405 405",
		"delete":      "401 405 405 405 405 405 405 405 401 401 401",
		"recreate":    "401 405 405 405 405 405 405 405 401 401 401",
		"grants-list": "401 400 400 400 400 400 400 400 401 401 401",
		"grants-add":  "401 400 400 400 400 400 400 400 401 401 401",
	},
	// An attachment's stream: read as its entity's streams are; written once by its
	// upload (POST /_electric/entities/:type/:id/attachments), never through the stream
	// API, not even with the entity's write token (which is no principal: 401).
	"attachment": {
		"catch-up":    "401 ok  ok  403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  ok  403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  ok  403 403 403 403 ok  401 401 401",
		"head":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  ok  403 403 403 403 ok  401 401 401",
		"append":      "401 405 405 405 405 405 405 405 401 401 401",
		"close":       "401 405 405 405 405 405 405 405 401 401 401",
		"delete":      "401 405 405 405 405 405 405 405 401 401 401",
		"recreate":    "401 405 405 405 405 405 405 405 401 401 401",
		"grants-list": "401 400 400 400 400 400 400 400 401 401 401",
		"grants-add":  "401 400 400 400 400 400 400 400 401 401 401",
	},
	// Deleting a type changes nothing about its entities' streams.
	"orphan": {
		"catch-up":    "401 ok  ok  403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  ok  403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  ok  403 403 403 403 ok  401 401 401",
		"head":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  ok  403 403 403 403 ok  401 401 401",
		"append":      "401 401 401 401 401 401 401 401 ok  401 401",
		"close":       "401 401 401 401 401 401 401 401 403 401 401",
		"delete":      "401 405 405 405 405 405 405 405 401 401 401",
		"recreate":    "401 405 405 405 405 405 405 405 401 401 401",
		"grants-list": "401 400 400 400 400 400 400 400 401 401 401",
		"grants-add":  "401 400 400 400 400 400 400 400 401 401 401",
	},
	// A runner's wake stream: its owner reads it; only the server writes it.
	"wake": {
		"catch-up":    "401 ok  403 403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  403 403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  403 403 403 403 403 ok  401 401 401",
		"head":        "401 ok  403 403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  403 403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  403 403 403 403 403 ok  401 401 401",
		"append":      "401 403 403 403 403 403 403 403 401 401 401",
		"close":       "401 403 403 403 403 403 403 403 401 401 401",
		"delete":      "401 403 403 403 403 403 403 403 401 401 401",
		"recreate":    "401 403 403 403 403 403 403 403 401 401 401",
		"grants-list": "401 403 403 403 403 403 403 403 401 401 401",
		"grants-add":  "401 403 403 403 403 403 403 403 401 401 401",
	},
	// Shared state: read and written through the entity it is linked to (rita reads
	// /vault/v1, will writes it); deleted by privileged principals only; never shared by
	// stream grants. The write token is not a principal.
	"shared": {
		"catch-up":    "401 ok  ok  403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  ok  403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  ok  403 403 403 403 ok  401 401 401",
		"head":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  ok  403 403 403 403 ok  401 401 401",
		"append":      "401 ok  403 ok  403 403 403 ok  401 401 401",
		"close":       "401 ok  403 ok  403 403 403 ok  401 401 401",
		"delete":      "401 403 403 403 403 403 403 ok  401 401 401",
		"recreate":    "401 ok  403 ok  403 403 403 ok  401 401 401",
		"grants-list": "401 400 400 400 400 400 400 400 401 401 401",
		"grants-add":  "401 400 400 400 400 400 400 400 401 401 401",
	},
	// alice's principal entity: read as her entity's grants say; no write token of it
	// exists (/vault/v1's is refused: 401), and nothing else reaches it.
	"principal": {
		"catch-up":    "401 ok  ok  403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  ok  403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  ok  403 403 403 403 ok  401 401 401",
		"head":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  ok  403 403 403 403 ok  401 401 401",
		"append":      "401 401 401 401 401 401 401 401 401 401 401",
		"close":       "401 401 401 401 401 401 401 401 401 401 401",
		"delete":      "401 405 405 405 405 405 405 405 401 401 401",
		"recreate":    "401 405 405 405 405 405 405 405 401 401 401",
		"grants-list": "401 400 400 400 400 400 400 400 401 401 401",
		"grants-add":  "401 400 400 400 400 400 400 400 401 401 401",
	},
	// A cron stream: every principal reads it; only the server writes it.
	"cron": {
		"catch-up":    "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"long-poll":   "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"sse":         "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"head":        "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"fork":        "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"fork-by-url": "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"append":      "401 403 403 403 403 403 403 403 401 401 401",
		"close":       "401 403 403 403 403 403 403 403 401 401 401",
		"delete":      "401 403 403 403 403 403 403 403 401 401 401",
		"recreate":    "401 403 403 403 403 403 403 403 401 401 401",
		"grants-list": "401 403 403 403 403 403 403 403 401 401 401",
		"grants-add":  "401 403 403 403 403 403 403 403 401 401 401",
	},
	// alice's tag-membership stream: hers alone to read; only the server writes it.
	"members": {
		"catch-up":    "401 ok  403 403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  403 403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  403 403 403 403 403 ok  401 401 401",
		"head":        "401 ok  403 403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  403 403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  403 403 403 403 403 ok  401 401 401",
		"append":      "401 403 403 403 403 403 403 403 401 401 401",
		"close":       "401 403 403 403 403 403 403 403 401 401 401",
		"delete":      "401 403 403 403 403 403 403 403 401 401 401",
		"recreate":    "401 403 403 403 403 403 403 403 401 401 401",
		"grants-list": "401 403 403 403 403 403 403 403 401 401 401",
		"grants-add":  "401 403 403 403 403 403 403 403 401 401 401",
	},
	// alice's pgSync observation: hers alone to read (a row of a table is no less
	// private than an entity); only the server writes it (a PUT is under the reserved
	// /_electric prefix: 400).
	"pgsync": {
		"catch-up":    "401 ok  403 403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  403 403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  403 403 403 403 403 ok  401 401 401",
		"head":        "401 ok  403 403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  403 403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  403 403 403 403 403 ok  401 401 401",
		"append":      "401 403 403 403 403 403 403 403 401 401 401",
		"close":       "401 403 403 403 403 403 403 403 401 401 401",
		"delete":      "401 403 403 403 403 403 403 403 401 401 401",
		"recreate":    "401 400 400 400 400 400 400 400 401 401 401",
		"grants-list": "401 403 403 403 403 403 403 403 401 401 401",
		"grants-add":  "401 403 403 403 403 403 403 403 401 401 401",
	},
	// the observation of /vault/v1 (metadata.entityUrl): read as the entity is read
	"pgsync-entity": {
		"catch-up":    "401 ok  ok  403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  ok  403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  ok  403 403 403 403 ok  401 401 401",
		"head":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  ok  403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  ok  403 403 403 403 ok  401 401 401",
		"append":      "401 403 403 403 403 403 403 403 401 401 401",
		"close":       "401 403 403 403 403 403 403 403 401 401 401",
		"delete":      "401 403 403 403 403 403 403 403 401 401 401",
		"recreate":    "401 400 400 400 400 400 400 400 401 401 401",
		"grants-list": "401 403 403 403 403 403 403 403 401 401 401",
		"grants-add":  "401 403 403 403 403 403 403 403 401 401 401",
	},
	// alice's private webhook source's stream: hers to read (and to confirm with a PUT, as
	// Electric's runtime does before observing it); nobody appends, closes, deletes or
	// shares it through the stream API, an admin neither.
	"webhook": {
		"catch-up":    "401 ok  403 403 403 403 403 ok  401 401 401",
		"long-poll":   "401 ok  403 403 403 403 403 ok  401 401 401",
		"sse":         "401 ok  403 403 403 403 403 ok  401 401 401",
		"head":        "401 ok  403 403 403 403 403 ok  401 401 401",
		"fork":        "401 ok  403 403 403 403 403 ok  401 401 401",
		"fork-by-url": "401 ok  403 403 403 403 403 ok  401 401 401",
		"append":      "401 403 403 403 403 403 403 403 401 401 401",
		"close":       "401 403 403 403 403 403 403 403 401 401 401",
		"delete":      "401 403 403 403 403 403 403 403 401 401 401",
		"recreate":    "401 ok  403 403 403 403 403 ok  401 401 401",
		"grants-list": "401 403 403 403 403 403 403 403 401 401 401",
		"grants-add":  "401 403 403 403 403 403 403 403 401 401 401",
	},
	// a public webhook source's stream: every principal reads it; the rest as above.
	"webhook-public": {
		"catch-up":    "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"long-poll":   "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"sse":         "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"head":        "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"fork":        "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"fork-by-url": "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"append":      "401 403 403 403 403 403 403 403 401 401 401",
		"close":       "401 403 403 403 403 403 403 403 401 401 401",
		"delete":      "401 403 403 403 403 403 403 403 401 401 401",
		"recreate":    "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
		"grants-list": "401 403 403 403 403 403 403 403 401 401 401",
		"grants-add":  "401 403 403 403 403 403 403 403 401 401 401",
	},
}

// routeExpected are the other routes that reach streams or what they hold (wakes, rows
// of entities, prompts), one answer per caller. "ok+" is a 2xx whose body shows alice's
// entity, "ok-" a 2xx whose body does not; "pass" is any answer but 401, 403 or a 5xx.
var routeExpected = map[string]string{
	//                                                  anon owner reader writer deleter manager stranger admin token bobtoken lookalike
	"PUT /__ds/subscriptions/{id}":             "401 403 403 403 403 403 403 pass 401 401 401",
	"PUT /v1/stream/__ds/subscriptions/{id}":   "401 403 403 403 403 403 403 pass 401 401 401",
	"POST /__ds/subscriptions/{id}/claim":      "401 403 403 403 403 403 403 pass 401 401 401",
	"GET /_electric/electric/v1/shape":         "401 ok+ ok+ ok- ok- ok- ok- ok+ 401 401 401",
	"POST /_electric/entities/{type}/{id}/mcp": "401 ok  ok  401 401 401 401 ok  401 401 401",
	// a fork is a copy of the stream the forker then owns: only the fork permission (the
	// owner's, an admin's) makes one; read, write, delete or manage alone do not
	"POST /_electric/entities/{type}/{id}/fork":   "401 ok  401 401 401 401 401 ok  401 401 401",
	"GET /_electric/entities/{type}/{id}/mcp":     "401 pass pass 401 401 401 401 pass 401 401 401",
	"GET /_electric/runners/{id}":                 "401 ok  403 403 403 403 403 ok  401 401 401",
	"POST /_electric/runners/{id}/claim":          "401 ok  403 403 403 403 403 pass 401 401 401", // admin: 409, the owner holds the wake
	"POST /_electric/wake-callbacks/{consumerId}": "404 404 404 404 404 404 404 404 404 404 404",
	// a wake on alice's entity delivered to bob's: it would carry alice's events to bob,
	// so only a principal who may read the one and write the other (an admin) makes it
	"POST /_electric/wake": "401 401 401 401 401 401 401 ok  401 401 401",
	// unregistering is a write to the subscriber: bob's own entity
	"POST /_electric/wake/unregister":                  "401 401 401 401 401 401 ok  ok  401 401 401",
	"POST /__ds/subscriptions/{id}/callback":           "401 401 401 401 401 401 401 401 401 401 401",
	"POST /v1/stream/__ds/subscriptions/{id}/claim":    "401 403 403 403 403 403 403 pass 401 401 401",
	"POST /v1/stream/__ds/subscriptions/{id}/callback": "401 401 401 401 401 401 401 401 401 401 401",
	// webhook sources: alice's private source is hers (and an admin's) to see, get and
	// revoke ("src+": the list shows it, "src-": it does not); anyone makes its own; bob
	// may not subscribe his entity to it (404, as for no source); an unsigned delivery
	// is refused whoever sends it.
	"GET /_electric/webhook-sources":                                         "401 src+ src- src- src- src- src- src+ 401 401 401",
	"POST /_electric/webhook-sources":                                        "401 ok  ok  ok  ok  ok  ok  ok  401 401 401",
	"GET /_electric/webhook-sources/{webhookKey}":                            "401 ok  404 404 404 404 404 ok  401 401 401",
	"DELETE /_electric/webhook-sources/{webhookKey}":                         "401 ok  404 404 404 404 404 ok  401 401 401",
	"PUT /_electric/entities/{type}/{id}/webhook-source-subscriptions/{sid}": "401 401 401 401 401 401 404 ok  401 401 401",
	"POST /_electric/webhook-deliveries/{endpointKey}":                       "401 401 401 401 401 401 401 401 401 401 401",
	"POST /_electric/webhook-deliveries/{endpointKey}/*":                     "401 401 401 401 401 401 401 401 401 401 401",

	// an attachment's bytes through the entity API: the entity's read permission
	"GET /_electric/entities/{type}/{id}/attachments/{attId}": "401 ok+ ok+ 401 401 401 401 ok+ 401 401 401",
}

// outsideMatrix are routes that reach no stream's bytes, with why; the authorisation
// matrix (TestAuthorisationMatrix) covers who may use them.
var outsideMatrix = map[string]string{
	"/_electric/health": "no stream", "/_electric/ready": "no stream", "/_electric/metrics": "admin only, no stream bytes",
	"/_electric/entity-types": "types: no stream bytes", "/_electric/entities": "entity rows, filtered to readable",
	"/_electric/console": "static files", "/__ds/jwks.json": "public keys", "/v1/stream/__ds/jwks.json": "public keys",
}

// outsidePrefixes place whole route families outside the matrix, with why.
var outsidePrefixes = map[string]string{
	"/_electric/entity-types/": "types: no stream bytes",
	"/_electric/entities/":     "the entity API: its own permissions (TestAuthorisationMatrix); streams are reached through * /*",
	"/_electric/runners":       "runner control plane: owner only (the runner rows above cover its wakes)",
	"/_electric/console/":      "static files",
	"/__ds/subscriptions/":     "admin-only subscription management (the rows above)",
	"/v1/stream/__ds/":         "admin-only subscription management (the rows above)",
	"/_electric/stream-grants": "the grants-list and grants-add ways of the stream rows",
	"/_electric/observations/": "ensure the server's cron and membership streams (the cron and members rows); a membership stream is the caller's own",
	"/_electric/pg-sync/":      "register makes the caller's own pg-sync stream (the pgsync row, reached under it by the \"\" way)",
	"/_electric/feed":          "the live feed reads through the router with the caller's credentials: the \"feed\" way of every stream row",
}

// isolationFixture is the world of the matrix, made through the API as its users would.
type isolationFixture struct {
	srv    *testserver.Server
	key    *testserver.JWTKey
	tokens map[string]string // caller -> Authorization value
	paths  map[string]string // stream kind -> path
	seq    atomic.Int64
}

func newIsolationFixture(t *testing.T) *isolationFixture {
	key := testserver.NewJWTKey(t)
	dbURL := pgtest.URL(t)
	dropPgSyncSlotsAtEnd(t, dbURL) // after the server stops
	pgExec(t, dbURL, `CREATE TABLE iso_rows (id int PRIMARY KEY, v text)`)
	srv := testserver.Start(t, testserver.Options{QuietLogs: true, Admins: []string{"service:ops"}, DBURL: dbURL,
		PgSync: pgsync.Options{Tables: []string{"public.iso_rows"}},
		API: api.Config{Auth: key.Auth, LongPollTimeout: 300 * time.Millisecond, SSELifetime: 2 * time.Second,
			PublicStreamPrefixes: []string{"/pub"}}})
	f := &isolationFixture{srv: srv, key: key, tokens: map[string]string{}, paths: map[string]string{}}
	for caller, sub := range isolationSubjects {
		f.tokens[caller] = "Bearer " + key.Token(t, sub)
	}
	f.tokens["alice-look-alike"] = "Bearer " + key.Token(t, " user:alice")

	f.must(t, "owner", "POST", "/_electric/entity-types", `{"name":"vault","description":"d",
		"slash_commands":[{"name":"open","description":"Open"}]}`, http.StatusCreated)
	f.tokens["write-token"] = "Bearer " + f.spawnToken(t, "owner", "/vault/v1")
	f.must(t, "stranger", "POST", "/_electric/entity-types", `{"name":"bobs","description":"d"}`, http.StatusCreated)
	f.tokens["bob-write-token"] = "Bearer " + f.spawnToken(t, "stranger", "/bobs/b1")
	for _, g := range []struct{ who, perm string }{{"user:rita", "read"}, {"user:will", "write"}, {"user:dora", "delete"}, {"user:max", "manage"}} {
		f.must(t, "owner", "POST", "/_electric/entities/vault/v1/grants",
			`{"subject_kind":"principal","subject_value":"`+g.who+`","permission":"`+g.perm+`"}`, http.StatusCreated)
	}
	f.send(t, "/vault/v1", "hello")
	f.paths["main"], f.paths["collection"] = "/vault/v1/main", "/vault/v1/slash-commands"
	body, ct := multipartBody(t, filePart("v.txt", "text/plain", []byte("the /vault/v1 file")), field("id", "iso"),
		field("subject", `{"type":"inbox","key":"m"}`))
	up := f.call(t, "owner", "POST", "/_electric/entities/vault/v1/attachments", string(body), "Content-Type", ct)
	require.Equal(t, http.StatusCreated, up.status, up.body)
	f.paths["attachment"] = "/vault/v1/attachments/iso"
	// alice's principal entity (her sends made it), shared as /vault/v1 is
	for _, g := range []struct{ who, perm string }{{"user:rita", "read"}, {"user:will", "write"}, {"user:dora", "delete"}, {"user:max", "manage"}} {
		f.must(t, "owner", "POST", "/_electric/entities/principal/user:alice/grants",
			`{"subject_kind":"principal","subject_value":"`+g.who+`","permission":"`+g.perm+`"}`, http.StatusCreated)
	}
	f.paths["principal"] = "/principal/user:alice/main"

	// an entity whose type is then deleted
	f.must(t, "owner", "POST", "/_electric/entity-types", `{"name":"gone","description":"d"}`, http.StatusCreated)
	orphanToken := f.spawnToken(t, "owner", "/gone/g1")
	f.must(t, "owner", "POST", "/_electric/entities/gone/g1/grants",
		`{"subject_kind":"principal","subject_value":"user:rita","permission":"read"}`, http.StatusCreated)
	f.send(t, "/gone/g1", "before the type went")
	f.must(t, "owner", "DELETE", "/_electric/entity-types/gone", "", http.StatusNoContent)
	f.paths["orphan"] = "/gone/g1/main"
	f.tokens["orphan-write-token"] = "Bearer " + orphanToken

	f.must(t, "owner", "POST", "/_electric/runners", `{"id":"alr"}`, http.StatusCreated)
	f.paths["wake"] = "/runners/alr/wake"
	// an entity dispatched to the runner: its subscription runner:alr exists
	f.must(t, "owner", "POST", "/_electric/entity-types", `{"name":"relay","description":"d",
		"default_dispatch_policy":{"targets":[{"type":"runner","runnerId":"alr"}]}}`, http.StatusCreated)
	f.spawnToken(t, "owner", "/relay/r1")

	f.paths["plain"] = f.plain(t, "/alice/notes")
	f.paths["public"] = f.plain(t, "/pub/board")
	// a plain stream from before owners were recorded: created with no owner
	_, _, err := srv.Streams.Create(context.Background(), "/legacy/old", streamdb.CreateConfig{ContentType: "application/json"},
		[][]byte{[]byte(`{"old":true}`)})
	require.NoError(t, err)
	f.paths["legacy"] = "/legacy/old"
	f.paths["shared"] = f.shared(t, "iso")
	res := f.call(t, "stranger", "POST", "/_electric/observations/cron/ensure-stream", `{"expression":"0 9 * * *","timezone":"Europe/Paris"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	f.paths["cron"] = gjsonString(t, res.body, "streamUrl")
	res = f.call(t, "owner", "POST", "/_electric/observations/entities/ensure-stream", `{"tags":{"team":"a"}}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	f.paths["members"] = gjsonString(t, res.body, "streamUrl")
	f.paths["webhook"] = f.webhookSource(t, "iso-private", false)
	f.paths["webhook-public"] = f.webhookSource(t, "iso-public", true)
	res = f.call(t, "owner", "POST", "/_electric/pg-sync/register", `{"options":{"table":"iso_rows"}}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	f.paths["pgsync"] = gjsonString(t, res.body, "streamUrl")
	res = f.call(t, "owner", "POST", "/_electric/pg-sync/register", `{"options":{"table":"iso_rows"},"metadata":{"entityUrl":"/vault/v1"}}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	f.paths["pgsync-entity"] = gjsonString(t, res.body, "streamUrl")
	pgExec(t, dbURL, `INSERT INTO iso_rows VALUES (1, 'secret')`)
	testwait.Until(t, "the row on alice's pg-sync stream", func() bool {
		return strings.Contains(f.call(t, "owner", "GET", f.paths["pgsync"]+"?offset=-1", "").body, "secret")
	}, 10*time.Second)
	return f
}

// webhookSource makes a webhook source of alice's and returns its stream.
func (f *isolationFixture) webhookSource(t *testing.T, key string, public bool) string {
	f.must(t, "owner", "POST", "/_electric/webhook-sources", `{"webhookKey":"`+key+`","scheme":"github",
		"secret":"iso-secret-0123456789","public":`+strconv.FormatBool(public)+`}`, http.StatusCreated)
	return "/_webhooks/" + key
}

// shared makes shared state of alice's for her entity /vault/v1, with one message.
func (f *isolationFixture) shared(t *testing.T, id string) string {
	path := "/_electric/shared-state/" + id
	res := f.call(t, "owner", "PUT", path, `[{"n":1}]`, "Content-Type", "application/json", "Electric-Owner-Entity", "/vault/v1")
	require.Equal(t, http.StatusCreated, res.status, res.body)
	return path
}

func gjsonString(t *testing.T, body, field string) string {
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	s, _ := m[field].(string)
	require.NotEmpty(t, s, body)
	return s
}

// plain creates a plain stream of alice's at path with one message and the matrix's
// grants (read, write, delete, manage to one principal each).
func (f *isolationFixture) plain(t *testing.T, path string) string {
	f.must(t, "owner", "PUT", path, `[{"n":1}]`, http.StatusCreated)
	for _, g := range []struct{ who, perm string }{{"user:rita", "read"}, {"user:will", "write"}, {"user:dora", "delete"}, {"user:max", "manage"}} {
		f.must(t, "owner", "POST", "/_electric/stream-grants?stream="+path,
			`{"subject_kind":"principal","subject_value":"`+g.who+`","permission":"`+g.perm+`"}`, http.StatusCreated)
	}
	return path
}

// fresh is a stream of kind made for one destructive way (close, delete), so that it
// does not change what the other cells see; entity and wake streams are never changed
// by the ways the matrix expects to be refused.
func (f *isolationFixture) fresh(t *testing.T, kind string) string {
	n := strconv.FormatInt(f.seq.Add(1), 10)
	switch kind {
	case "plain":
		return f.plain(t, "/alice/fresh-"+n)
	case "public":
		return f.plain(t, "/pub/fresh-"+n)
	case "legacy":
		_, _, err := f.srv.Streams.Create(context.Background(), "/legacy/fresh-"+n, streamdb.CreateConfig{ContentType: "application/json"},
			[][]byte{[]byte(`{"old":true}`)})
		require.NoError(t, err)
		return "/legacy/fresh-" + n
	case "shared":
		return f.shared(t, "fresh-"+n)
	}
	return f.paths[kind]
}

func (f *isolationFixture) spawnToken(t *testing.T, who, url string) string {
	res := f.call(t, who, "PUT", "/_electric/entities"+url, `{}`)
	require.Equal(t, http.StatusCreated, res.status, "spawn %s: %s", url, res.body)
	tok := res.header.Get("X-Write-Token")
	require.NotEmpty(t, tok)
	return tok
}

func (f *isolationFixture) send(t *testing.T, url, text string) {
	f.must(t, "owner", "POST", "/_electric/entities"+url+"/send",
		`{"type":"composer_input","payload":{"source":"`+text+`","nodes":[{"kind":"text","start":0,"end":`+
			strconv.Itoa(len(text))+`,"raw":"`+text+`"}]}}`, http.StatusOK)
}

type isoResponse struct {
	status int
	header http.Header
	body   string
}

// call makes one request as caller, with headers as name/value pairs.
func (f *isolationFixture) call(t *testing.T, caller, method, path, body string, headers ...string) isoResponse {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok := f.tokens[caller]; tok != "" {
		req.Header.Set("Authorization", tok)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	require.NoError(t, err, "%s %s as %s", method, path, caller)
	defer res.Body.Close()
	var data []byte
	if res.Header.Get("Content-Type") == "text/event-stream" {
		data = nil // an SSE stream stays open: the status is the answer
	} else {
		data, _ = io.ReadAll(io.LimitReader(res.Body, 64<<10))
	}
	return isoResponse{status: res.StatusCode, header: res.Header, body: string(data)}
}

func (f *isolationFixture) must(t *testing.T, caller, method, path, body string, want int) isoResponse {
	t.Helper()
	res := f.call(t, caller, method, path, body)
	require.Equal(t, want, res.status, "%s %s as %s: %s", method, path, caller, res.body)
	return res
}

// way makes the request of one way on the stream at path, as caller. prefix is the
// stream route's prefix ("" for the root, "/v1/stream" for the alias).
func (f *isolationFixture) way(t *testing.T, way, prefix, path, caller string) isoResponse {
	tokenFor := caller
	if caller == "write-token" && strings.HasPrefix(path, "/gone/") {
		tokenFor = "orphan-write-token" // the write token of the stream's own entity
	}
	call := func(method, p, body string, headers ...string) isoResponse {
		t.Helper()
		saved := f.tokens[caller]
		f.tokens[caller] = f.tokens[tokenFor]
		defer func() { f.tokens[caller] = saved }()
		return f.call(t, caller, method, p, body, headers...)
	}
	at := prefix + path
	event := `[{"type":"note","key":"k` + strconv.FormatInt(f.seq.Add(1), 10) + `","value":{"n":2},"headers":{"operation":"insert"}}]`
	switch way {
	case "catch-up":
		return call("GET", at+"?offset=-1", "")
	case "long-poll":
		return call("GET", at+"?offset=-1&live=long-poll", "")
	case "sse":
		return call("GET", at+"?offset=-1&live=sse", "")
	case "head":
		return call("HEAD", at, "")
	case "fork":
		return call("PUT", prefix+"/forks/f"+strconv.FormatInt(f.seq.Add(1), 10), "", "Stream-Forked-From", path)
	case "fork-by-url":
		return call("PUT", prefix+"/forks/f"+strconv.FormatInt(f.seq.Add(1), 10), "", "Stream-Forked-From", f.srv.URL+"/v1/stream"+path)
	case "append":
		return call("POST", at, event)
	case "close":
		return call("POST", at, "", "Stream-Closed", "true")
	case "delete":
		return call("DELETE", at, "")
	case "recreate":
		return call("PUT", at, "", "Content-Type", "application/json")
	case "feed":
		saved := f.tokens[caller]
		f.tokens[caller] = f.tokens[tokenFor]
		defer func() { f.tokens[caller] = saved }()
		return f.viaFeed(t, caller, at+"?offset=-1")
	case "grants-list":
		return call("GET", "/_electric/stream-grants?stream="+path, "")
	case "grants-add":
		return call("POST", "/_electric/stream-grants?stream="+path,
			`{"subject_kind":"principal","subject_value":"user:nobody","permission":"read"}`)
	}
	t.Fatalf("unknown way %s", way)
	return isoResponse{}
}

// matches reports whether res is the expected answer.
func matches(want string, res isoResponse) bool {
	switch want {
	case "ok":
		return res.status >= 200 && res.status < 300
	case "ok+":
		return res.status >= 200 && res.status < 300 && strings.Contains(res.body, "/vault/v1")
	case "ok-":
		return res.status >= 200 && res.status < 300 && !strings.Contains(res.body, "/vault/v1")
	case "pass":
		return res.status != 401 && res.status != 403 && res.status < 500
	case "src+":
		return res.status == 200 && strings.Contains(res.body, `"iso-private"`)
	case "src-":
		return res.status == 200 && !strings.Contains(res.body, `"iso-private"`)
	}
	n, err := strconv.Atoi(want)
	return err == nil && res.status == n
}

// runIsolationMatrix runs every cell and returns the mismatches ("" cells: none).
func runIsolationMatrix(t *testing.T, f *isolationFixture) (mismatches []string, cells int) {
	routes, err := f.srv.API.AccessRules()
	require.NoError(t, err)
	var streamRoutes []string
	seenOther := map[string]bool{}
	for _, ra := range routes {
		key := ra.Method + " " + strings.TrimSuffix(ra.Pattern, "/")
		switch {
		case ra.Kind == "stream" && (ra.Pattern == "/_electric/shared-state/{id}" || ra.Pattern == "/_electric/pg-sync/*"):
			// the shared row's paths are under it: the "" way reaches it
		case ra.Kind == "stream":
			prefix := strings.TrimSuffix(strings.TrimSuffix(ra.Pattern, "*"), "/")
			if !slices.Contains(streamRoutes, prefix) {
				streamRoutes = append(streamRoutes, prefix)
			}
		case routeExpected[key] != "":
			seenOther[key] = true
		default:
			require.True(t, placedOutside(ra.Pattern), "route %s %s is neither in the isolation matrix nor placed outside it with a reason", ra.Method, ra.Pattern)
		}
	}
	require.ElementsMatch(t, []string{"", "/v1/stream"}, streamRoutes, "the stream routes of the router")
	for key := range routeExpected {
		require.True(t, seenOther[key], "the matrix names %s, which the router does not serve", key)
	}

	check := func(cell, want string, res isoResponse) {
		cells++
		if !matches(want, res) {
			mismatches = append(mismatches, fmt.Sprintf("%s: want %s, got %d %s", cell, want, res.status, truncate(res.body, 160)))
		}
	}
	for _, prefix := range streamRoutes {
		for _, kind := range streamKinds {
			for _, way := range streamWays {
				wants := strings.Fields(isolationExpected[kind][way])
				require.Len(t, wants, len(isolationCallers), "%s %s", kind, way)
				for i, caller := range isolationCallers {
					path := f.paths[kind]
					if (way == "close" || way == "delete") && matches(wants[i], isoResponse{status: 200}) {
						path = f.fresh(t, kind)
					}
					res := f.way(t, way, prefix, path, caller)
					check(fmt.Sprintf("%s%s %s %s as %s", prefix, path, kind, way, caller), wants[i], res)
				}
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(routeExpected)) {
		wants := strings.Fields(routeExpected[key])
		require.Len(t, wants, len(isolationCallers), key)
		for i, caller := range isolationCallers {
			check(key+" as "+caller, wants[i], f.route(t, key, caller))
		}
	}
	return mismatches, cells
}

// route makes the request of one of routeExpected's routes, as caller.
func (f *isolationFixture) route(t *testing.T, key, caller string) isoResponse {
	method, pattern, _ := strings.Cut(key, " ")
	n := strconv.FormatInt(f.seq.Add(1), 10)
	switch pattern {
	case "/__ds/subscriptions/{id}", "/v1/stream/__ds/subscriptions/{id}":
		return f.call(t, caller, method, strings.ReplaceAll(pattern, "{id}", "iso-"+n),
			`{"type":"pull-wake","pattern":"/vault/**","wake_stream":"/iso-wake-`+n+`"}`)
	case "/__ds/subscriptions/{id}/claim", "/v1/stream/__ds/subscriptions/{id}/claim":
		// a subscription of nobody's: the rule, not a claim, is what the cell is about
		return f.call(t, caller, method, strings.ReplaceAll(pattern, "{id}", "iso-none"), `{"worker":"w"}`)
	case "/__ds/subscriptions/{id}/callback", "/v1/stream/__ds/subscriptions/{id}/callback":
		return f.call(t, caller, method, strings.ReplaceAll(pattern, "{id}", "runner:alr"), `{"generation":1,"done":true}`)
	case "/_electric/electric/v1/shape":
		return f.call(t, caller, method, pattern+"?table=entities&offset=-1", "")
	case "/_electric/entities/{type}/{id}/mcp":
		path := "/_electric/entities/vault/v1/mcp"
		if method == "GET" {
			return f.call(t, caller, method, path, "", "Accept", "application/json, text/event-stream")
		}
		return f.call(t, caller, method, path, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",
			"capabilities":{},"clientInfo":{"name":"matrix","version":"1"}}}`, "Accept", "application/json, text/event-stream")
	case "/_electric/entities/{type}/{id}/fork":
		return f.call(t, caller, method, "/_electric/entities/vault/v1/fork", `{"instance_id":"iso-fork-`+n+`"}`)
	case "/_electric/entities/{type}/{id}/attachments/{attId}":
		return f.call(t, caller, method, "/_electric/entities/vault/v1/attachments/iso", "")
	case "/_electric/runners/{id}":
		return f.call(t, caller, method, "/_electric/runners/alr", "")
	case "/_electric/runners/{id}/claim":
		return f.call(t, caller, method, "/_electric/runners/alr/claim", `{}`)
	case "/_electric/wake-callbacks/{consumerId}":
		return f.call(t, caller, method, "/_electric/wake-callbacks/w_iso"+n, `{"epoch":1,"done":true}`)
	case "/_electric/wake":
		return f.call(t, caller, method, pattern, `{"subscriberUrl":"/bobs/b1","sourceUrl":"/vault/v1","condition":{"on":"change"},"manifestKey":"iso-`+n+`"}`)
	case "/_electric/wake/unregister":
		return f.call(t, caller, method, pattern, `{"subscriberUrl":"/bobs/b1","sourceUrl":"/vault/v1"}`)
	case "/_electric/webhook-sources":
		if method == "POST" {
			return f.call(t, caller, method, pattern, `{"webhookKey":"iso-made-`+n+`","scheme":"github"}`)
		}
		return f.call(t, caller, method, pattern, "")
	case "/_electric/webhook-sources/{webhookKey}":
		key := "iso-private"
		if method == "DELETE" { // a fresh one each time: revoking changes what others see
			key = "iso-revoke-" + n
			f.must(t, "owner", "POST", "/_electric/webhook-sources", `{"webhookKey":"`+key+`","scheme":"github"}`, http.StatusCreated)
		}
		return f.call(t, caller, method, "/_electric/webhook-sources/"+key, "")
	case "/_electric/entities/{type}/{id}/webhook-source-subscriptions/{sid}":
		return f.call(t, caller, method, "/_electric/entities/bobs/b1/webhook-source-subscriptions/iso-"+n, `{"webhookKey":"iso-private"}`)
	case "/_electric/webhook-deliveries/{endpointKey}":
		return f.call(t, caller, method, "/_electric/webhook-deliveries/iso-private", `{}`, "X-GitHub-Delivery", "iso-"+n)
	case "/_electric/webhook-deliveries/{endpointKey}/*":
		return f.call(t, caller, method, "/_electric/webhook-deliveries/iso-private/some/bucket", `{}`, "X-GitHub-Delivery", "iso-"+n)
	}
	t.Fatalf("no request for %s", key)
	return isoResponse{}
}

// viaFeed reads path through a live feed session the caller opens: the read's status
// and body, or the session's refusal.
func (f *isolationFixture) viaFeed(t *testing.T, caller, path string) isoResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/_electric/feed", nil)
	require.NoError(t, err)
	if tok := f.tokens[caller]; tok != "" {
		req.Header.Set("Authorization", tok)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return isoResponse{status: res.StatusCode, header: res.Header, body: string(data)}
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var out isoResponse
	var body strings.Builder
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			name = ev
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Session, Data string
			Status        int
			Headers       map[string]string
		}
		require.NoError(t, json.Unmarshal([]byte(data), &ev))
		switch name {
		case "open":
			post, err := http.NewRequest(http.MethodPost, f.srv.URL+"/_electric/feed/"+ev.Session+"/requests",
				strings.NewReader(`{"id":"m","path":`+strconv.Quote(path)+`}`))
			require.NoError(t, err)
			post.Header.Set("Content-Type", "application/json")
			post.Header.Set("Authorization", f.tokens[caller])
			pres, err := http.DefaultClient.Do(post)
			require.NoError(t, err)
			pres.Body.Close()
			require.Equal(t, http.StatusAccepted, pres.StatusCode)
		case "head":
			out.status, out.header = ev.Status, http.Header{}
			for k, v := range ev.Headers {
				out.header.Set(k, v)
			}
		case "body":
			body.WriteString(ev.Data)
		case "end", "fail":
			out.body = body.String()
			return out
		}
	}
	t.Fatalf("the feed ended before the read of %s as %s", path, caller)
	return out
}

func placedOutside(pattern string) bool {
	p := strings.TrimSuffix(pattern, "/")
	if outsideMatrix[p] != "" {
		return true
	}
	for prefix := range outsidePrefixes {
		if strings.HasPrefix(p+"/", prefix) || strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// TestIsolationMatrix: every cell answers as written.
func TestIsolationMatrix(t *testing.T) {
	f := newIsolationFixture(t)
	mismatches, cells := runIsolationMatrix(t, f)
	require.Empty(t, mismatches, "%d of %d cells differ:\n%s", len(mismatches), cells, strings.Join(mismatches, "\n"))
	require.Greater(t, cells, 1500)
	t.Logf("isolation matrix: %d cells", cells)
}

// TestIsolationMatrixNoticesALoosenedRule: with one rule loosened in the server (any
// principal may read plain streams; any principal may delete wake streams), the matrix
// fails, on the cells of that rule.
func TestIsolationMatrixNoticesALoosenedRule(t *testing.T) {
	for _, loose := range []struct {
		kind streamdb.AccessKind
		op   string
		cell string // a cell that must then differ
	}{
		{streamdb.AccessPlain, "read", "/alice/notes plain catch-up as stranger"},
		{streamdb.AccessWake, "delete", "/runners/alr/wake wake delete as stranger"},
		{streamdb.AccessWebhook, "read", "/_webhooks/iso-private webhook catch-up as stranger"},
	} {
		t.Run(string(loose.kind)+"-"+loose.op, func(t *testing.T) {
			f := newIsolationFixture(t)
			f.srv.API.LoosenStreamRule(loose.kind, loose.op)
			mismatches, _ := runIsolationMatrix(t, f)
			require.NotEmpty(t, mismatches)
			require.True(t, slices.ContainsFunc(mismatches, func(m string) bool { return strings.HasPrefix(m, loose.cell+":") }),
				"the loosened cell %q is among the mismatches:\n%s", loose.cell, strings.Join(mismatches, "\n"))
			t.Logf("loosened %s %s: %d cells differ, e.g. %s", loose.kind, loose.op, len(mismatches), mismatches[0])
		})
	}
}
