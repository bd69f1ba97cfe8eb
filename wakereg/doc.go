// Package wakereg is Electric's cross-entity wakes: registrations that wake a subscriber
// entity when something is appended to a source (another entity's main stream, or a
// stream the server writes itself: cron ticks, tag membership, shared state).
//
// Registrations come from a spawn's `wake` (in the spawn's transaction), from
// POST /_electric/wake (through api), and from the `manifest` events a handler writes to
// its own stream (ManifestStatements, in that append's transaction). Every committed
// append to a source stream is evaluated exactly once, whoever wrote it and on whichever
// server process: wake_sources keeps a cursor per source stream, and one transaction
// locks the cursor, appends the matching `wake` events to the subscribers' streams and
// moves the cursor. Commits are heard through streamdb.OnCommit (this process's and, by
// NOTIFY, the others'); a sweep finds sources whose tail passed their cursor (a commit
// heard nowhere, a crash, a restart) and registrations whose debounce or timeout is due.
//
// The package knows nothing of HTTP: api decodes requests and decides access.
package wakereg
