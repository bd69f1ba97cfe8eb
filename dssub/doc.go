// Package dssub implements the Durable Streams protocol's reserved subscription APIs
// (/v1/stream/__ds/...): webhook and pull-wake subscriptions over the streams of
// package streamdb, durable in Postgres and served by any number of server processes
// sharing one database.
//
// A subscription links streams (paths relative to /v1/stream/) explicitly or through a
// glob pattern ("*" one segment, "**" any number) and keeps a cursor per stream. A stream
// whose tail is past its cursor has pending work; pending work starts a wake, at most one
// per subscription at a time. Appends that arrive while a wake is in flight are
// picked up by the next wake, which starts when the current one ends (done, release, or
// an expired lease). Every wake gets the next generation and a fresh wake_id, and every
// acknowledgement is fenced by both (409 FENCED otherwise).
//
//   - webhook: the wake is POSTed to the subscription's URL, signed with Ed25519
//     (Webhook-Signature: t=<unix>,kid=<kid>,ed25519=<base64url>; keys at
//     /v1/stream/__ds/jwks.json). A failed request is retried with exponential backoff
//     (at-least-once). A 2xx answer {"done":true} acknowledges every stream at the tail
//     the wake listed; otherwise the receiver calls the callback URL with its token until
//     it says done, each call extending a lease of lease_ttl_ms; a lapsed lease ends the
//     wake and pending work is delivered again in a new one.
//   - pull-wake: the wake is announced by a record appended to the wake stream; workers
//     claim it (a lease), acknowledge, and release.
//
// State lives in the ds_* tables (migration 006); the wake of a subscription changes only
// under its row lock, so processes need no coordination besides Postgres. Commits are
// matched against the subscriptions in memory (package streamdb's OnCommit reports this
// process's commits with their paths): compiled patterns and explicit paths are kept in an
// immutable matcher that is rebuilt when ds_state.version moves, which every change of
// subscriptions bumps. Time-driven work (retries, lapsed attempts and leases) is found by
// a poll of ds_subscriptions.due_at, and a periodic reconciliation finds work whose
// notification was lost (a process that died right after a commit, a stale matcher), so
// no pending work is forgotten.
package dssub
