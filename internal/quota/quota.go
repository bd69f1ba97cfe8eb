// Package quota bounds what one principal may create: entity types, runners,
// subscriptions, grants, plain streams, schedules, tag observations and attachments, and
// the tags of one entity. Every shared
// resource has a budget per tenant; without these, one principal with a token could
// fill the database (and every list the others page through). The owners of the tables
// count; this package holds the limits and the one answer beyond them: 429
// QUOTA_EXCEEDED with Retry-After.
package quota

import (
	"fmt"
	"net/http"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/principal"
)

// Limits are the quotas; 0 turns one off.
type Limits struct {
	Types         int // entity types a principal registered
	Runners       int // runners a principal owns
	Subscriptions int // Durable Streams subscriptions a principal created
	Grants        int // grants (entity, type and stream) a principal made
	Streams       int // plain streams a principal owns
	TagsPerEntity int // tags on one entity
	// WakeRegistrations are cross-entity wakes a principal registered (POST
	// /_electric/wake, a spawn's wake)
	WakeRegistrations int
	Schedules         int // cron schedules and pending future_sends a principal made
	Observations      int // tag observations (/_entities/<ref>) made for a principal
	WebhookSources    int // webhook sources a principal made (revoked ones do not count)
	// Attachments and AttachmentBytes bound the files a principal uploaded to entities
	// (POST /_electric/entities/:type/:id/attachments): how many, and their bytes.
	Attachments     int
	AttachmentBytes int
}

// Defaults are generous for one tenant's real use and small beside a database.
func Defaults() Limits {
	return Limits{Types: 1_000, Runners: 100, Subscriptions: 1_000, Grants: 10_000, Streams: 100_000, TagsPerEntity: 256,
		WakeRegistrations: 100_000, Schedules: 10_000, Observations: 1_000, WebhookSources: 100,
		Attachments: 10_000, AttachmentBytes: 1 << 30}
}

// CodeExceeded is the error code of a refused creation.
const CodeExceeded = "QUOTA_EXCEEDED"

// RetryAfter is the Retry-After of a refusal: a quota frees up only when the principal
// deletes something, so clients should not hammer.
const RetryAfter = "60"

// Exempt reports principals no quota applies to: the server's own.
func Exempt(p principal.Principal) bool { return p.IsSystem() }

// Check refuses p adding more of what when it already has n and n+adding would pass
// the limit. setting names the configuration that raises it.
func Check(p principal.Principal, n, adding, limit int, what, setting string) error {
	if limit <= 0 || Exempt(p) || n+adding <= limit {
		return nil
	}
	e := httpx.New(http.StatusTooManyRequests, CodeExceeded,
		fmt.Sprintf("%s has %d %s, the most allowed (%s)", p.String(), n, what, setting))
	e.RetryAfter = RetryAfter
	return e
}

// Counted is Check with the count read only when a limit applies: count(limit+1) says
// how many p has, reading no further than one past the limit.
func Counted(p principal.Principal, adding, limit int, what, setting string, count func(limit int) (int, error)) error {
	if limit <= 0 || Exempt(p) {
		return nil
	}
	n, err := count(limit + 1)
	if err != nil {
		return err
	}
	return Check(p, n, adding, limit, what, setting)
}
