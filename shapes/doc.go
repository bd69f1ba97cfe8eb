// Package shapes serves Electric shapes of the registry natively, from entityd's own
// tables: GET /_electric/electric/v1/shape?table=entities|entity_types speaks the
// Electric HTTP shape protocol (an initial snapshot at offset -1, then the changes after
// an offset, live long-polls, handles, must-refetch), so @electric-sql/client's
// ShapeStream and Shape materialise and follow the entity and type lists without an
// Electric service.
//
// Changes come from shape_log, which triggers on entities and entity_types fill in the
// writing transaction (migration 016). A reader takes only the changes of transactions
// older than the oldest one still running, in (txid, id) order, so an offset never
// skips a change that commits late. After a snapshot it also skips the changes of the
// transactions the snapshot saw (snapshot.go), so none is served twice.
package shapes
