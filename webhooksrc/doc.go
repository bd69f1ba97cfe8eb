// Package webhooksrc is Electric's webhook sources: outside services (a GitHub
// repository's webhook, anything that signs the Standard Webhooks way) POST signed
// deliveries to entityd, and each verified, new delivery becomes one `webhook_event` in
// the source's stream /_webhooks/<endpointKey>[/<bucket>], which Electric's runtime
// observes and whose appends wake the subscribed entities (package wakereg).
//
// A source is made by a principal (its owner, the tenant its deliveries are budgeted
// against) and is private (its streams are read by the owner and privileged principals)
// or public (read by any authenticated principal); the visibility is recorded on the
// streams when they are created (streamdb.AccessWebhook, AccessWebhookPublic) and decided
// by api's one stream access decision. The secret that verifies deliveries is stored
// with the source and never answered by a read.
//
// The package knows nothing of HTTP: api/entityapi decodes requests and decides access.
package webhooksrc
