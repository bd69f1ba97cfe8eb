// Package wake delivers work to Go entity handlers: exactly one handler run at a time per
// entity, across any number of server processes on one database, with every unit of work
// delivered (at least once, acknowledged atomically with the handler's writes) in stream
// order.
//
// The entity's main stream is its work log. Inbox messages, its creation, signals, fired
// timers and observations of other entities all appear there as events; entity_wake
// records, per entity, how far the log has been handled (scanned_seq) and which process
// holds the entity (holder) under which fencing epoch. A process claims an entity by
// bumping its epoch; it keeps it through its process-wide lease, renewed by heartbeat in
// wake_holders; when that lease lapses (a crash), any process may claim the entity and
// redeliver whatever was not acknowledged. Every acknowledgement checks the epoch in the
// same transaction as the handler's writes, so a stale holder can never write.
//
// One unit of work is delivered per wake: ctx.Wake is exactly one InboxWake, SpawnWake,
// ScheduleWake, ObservationWake or SignalWake, and every message is seen by the handler
// (the reference wakes once for the newest message only). A failing handler writes
// nothing but an error event; the wake is retried with exponential backoff and, after the
// configured number of attempts, the message is marked failed and the entity moves on.
package wake
