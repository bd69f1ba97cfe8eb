// Package pgsync serves Electric's pgSync observations natively: the rows of an
// operator-chosen Postgres table become a live source an entity observes
// (observe(pgSync({table})) in Electric's runtime), from the database's own logical
// replication — no separate Electric sync service.
//
// Registering an observation (Register) checks the table against the operator's
// allow-list, adds it to the deployment's publication and records a source: a stream
// /_electric/pg-sync/<ref> of the server's (access kind pgsync, read by the principal
// that registered it). One replicator per deployment holds the logical replication slot
// at a time (a session advisory lock, the lease; another process takes over when its
// holder's session ends) and streams pgoutput: each replicated transaction's row changes
// are appended to the streams of the sources observing their table as Electric's
// `pg_sync_change` events, together with the transaction's end LSN in pg_sync_state, in
// one streamdb transaction; only then is the slot told it may release that WAL. A
// transaction Postgres sends again (a crash, a switch of holder) ends at or before the
// recorded LSN and is skipped: nothing is lost and nothing is appended twice. Cross-entity
// wakes (package wakereg) then wake the observers from those appends like any other
// source.
//
// WAL retention is bounded three ways: Postgres's max_slot_wal_keep_size (the only bound
// while no server runs; checked at start), dropping the slot when no observation has
// existed for Options.SlotIdle, and the entityd_pgsync_slot_retained_wal_bytes metric.
// A slot Postgres invalidated (the bound was hit) is dropped and made again: changes
// committed in between are not delivered, which the log and
// entityd_pgsync_slot_invalidations_total say.
package pgsync
