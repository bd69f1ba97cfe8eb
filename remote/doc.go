// Package remote is the Electric Agents surface for handlers that run outside the
// server: the entity context added to webhook wakes of entity streams (Enricher), and the
// wake callbacks a handler claims, heartbeats and finishes a wake with
// (POST /_electric/wake-callbacks/:consumerId). The wakes themselves are Durable Streams
// subscription wakes (package dssub); this package adds Electric's vocabulary to them.
package remote
