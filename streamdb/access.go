package streamdb

import "errors"

// AccessKind says which rule decides who may use a stream.
type AccessKind string

const (
	// AccessPlain: the stream's owner, and the principals granted on it.
	AccessPlain AccessKind = "plain"
	// AccessEntity: an entity's stream (Access.Entity), under the entity's permissions.
	AccessEntity AccessKind = "entity"
	// AccessWake: written by the server only; read by its owner (a runner's wake stream).
	AccessWake AccessKind = "wake"
	// AccessShared: a shared-state stream (/_electric/shared-state/<id>), used by the
	// principals that may read or write an entity linked to it.
	AccessShared AccessKind = "shared"
	// AccessCron: a cron stream (/_cron/<spec>): read by any authenticated principal,
	// written by the server only.
	AccessCron AccessKind = "cron"
	// AccessMembers: a tag-membership stream (/_entities/<ref>): read by its owner (the
	// principal it was made for), written by the server only.
	AccessMembers AccessKind = "members"
	// AccessWebhook: a private webhook source's stream (/_webhooks/<endpointKey>[/...]):
	// read by its owner (the source's owner), written by the server only.
	AccessWebhook AccessKind = "webhook"
	// AccessWebhookPublic: a public webhook source's stream: read by any authenticated
	// principal, written by the server only.
	AccessWebhookPublic AccessKind = "webhook_public"
	// AccessPgSync: a pg-sync stream (/_electric/pg-sync/<ref>): read by its owner (the
	// principal that registered the observation), written by the server only.
	AccessPgSync AccessKind = "pgsync"
)

// Access is what is recorded about a stream for deciding who may use it: set when the
// stream is created and never changed, so a decision made from it holds for the
// stream's whole life (a stream created again at the same path is another stream, with
// another ID). streamdb stores it and leaves the deciding to its callers.
type Access struct {
	Kind AccessKind
	// Owner is the principal ("kind:id") that created the stream; "" for the server's
	// own streams and for streams created before owners were recorded.
	Owner string
	// Entity is the URL of the entity whose stream this is (Kind AccessEntity).
	Entity string
}

// kind is Kind, with the zero value read as plain.
func (a Access) kind() AccessKind {
	if a.Kind == "" {
		return AccessPlain
	}
	return a.Kind
}

// ErrStreamReplaced: the stream at the path is not the one the caller decided about (it
// was deleted and created again since). The caller decides again from a fresh lookup.
var ErrStreamReplaced = errors.New("streamdb: the stream at this path was replaced")
