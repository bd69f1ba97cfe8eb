// Package external is the server's side of entity handlers that run outside it (the Go
// SDK's runtime.External, Electric's runtime, any webhook handler): the entity context
// added to webhook wakes of entity streams (Enricher), where an entity's wakes are sent
// (Dispatch), the runners that pull them (Runners), and the wake callbacks a handler
// claims, heartbeats and finishes a wake with (POST /_electric/wake-callbacks/:consumerId).
// The wakes themselves are Durable Streams subscription wakes (package dssub); this
// package adds Electric's vocabulary to them.
package external
