// Package streamdb stores Durable Streams in Postgres.
//
// A stream is an append-only, totally ordered sequence of messages addressed by a path.
// Every message gets the next sequence number of its stream under the stream row's lock,
// so sequences have no gaps and commit in order. Offsets handed to clients are
// "<seq>_<pos>" (16 zero-padded digits each, see Offset), stable across restarts.
//
// Appends from concurrent requests are group-committed: a small number of lanes each
// collect whatever requests arrived while the previous transaction was committing and
// write them in one transaction (one WAL flush for many appends). A stream always maps
// to the same lane, so appends to one stream are applied in arrival order. Each caller
// is answered only after its transaction committed.
//
// Readers that reached the tail wait on an in-process notifier that lanes and
// transactions publish to after commit; other server processes on the same database
// learn about commits through one coalesced NOTIFY per transaction.
//
// The package knows nothing about entities. Callers that need to check their own rows in
// the same transaction as an append use an Admission (group-commit path) or WithTx.
package streamdb
