package webhooksrc

import (
	"encoding/json"
	"regexp"
	"time"

	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
)

// Schemes are the signature schemes a source may verify deliveries with.
const (
	// SchemeGitHub: X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256(secret, body);
	// X-GitHub-Delivery is the delivery id, X-GitHub-Event its event type.
	SchemeGitHub = "github"
	// SchemeStandard: Standard Webhooks (Svix and others): webhook-signature holds
	// "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>" entries; webhook-id is the
	// delivery id; webhook-timestamp must be within the tolerance of now.
	SchemeStandard = "standard-webhooks"
)

// Statuses of a source: only an active one takes deliveries and subscriptions.
const (
	StatusActive   = "active"
	StatusDisabled = "disabled"
	StatusRevoked  = "revoked"
)

// StreamPrefix is where the sources' streams are, as Electric's runtime names them.
const StreamPrefix = "/_webhooks/"

// keyPattern is the runtime's rule for an endpoint key (and ours for a webhook key).
var keyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// segmentPattern is the runtime's rule for one segment of a bucket path.
var segmentPattern = regexp.MustCompile(`^[A-Za-z0-9._~!$&'()*+,;=:@-]+$`)

// ValidKey reports whether k may be a webhook or endpoint key.
func ValidKey(k string) bool { return keyPattern.MatchString(k) }

// Source is a stored webhook source.
type Source struct {
	WebhookKey   string
	EndpointKey  string
	Owner        string // the principal ("kind:id") that made it: its tenant
	Label        string
	Description  string
	Scheme       string
	Secret       []byte // never answered by a read
	Status       string
	AgentVisible bool
	Public       bool
	Buckets      []Bucket
	Revision     int
	UpdatedAt    time.Time
}

// Bucket is a named family of sub-streams of a source (Electric's WebhookSourceBucket):
// PathTemplate's ":name" segments are filled from a subscription's params, which
// ParamsSchema checks.
type Bucket struct {
	Key          string            `json:"key"`
	Label        string            `json:"label"`
	Description  string            `json:"description,omitempty"`
	PathTemplate string            `json:"pathTemplate"`
	ParamsSchema json.RawMessage   `json:"paramsSchema"`
	EventTypes   []string          `json:"eventTypes,omitempty"`
	Filters      []json.RawMessage `json:"filters,omitempty"`
}

// StreamPath is the source's root stream.
func (s *Source) StreamPath() string { return StreamPrefix + s.EndpointKey }

// BucketStreamPath is the stream of a rendered bucket path ("" for the root).
func (s *Source) BucketStreamPath(bucket string) string {
	if bucket == "" {
		return s.StreamPath()
	}
	return s.StreamPath() + "/" + bucket
}

// Access is what the source's streams record for the one access decision.
func (s *Source) Access() streamdb.Access {
	kind := streamdb.AccessWebhook
	if s.Public {
		kind = streamdb.AccessWebhookPublic
	}
	return streamdb.Access{Kind: kind, Owner: s.Owner}
}

// Readable is the rule of the sources' streams and of the sources themselves: a public
// source is read by any authenticated principal, a private one by its owner, and every
// one by privileged principals. api.decideStream asks it from what a stream recorded
// (Access), the list and the subscription routes from the source.
func Readable(a streamdb.Access, p principal.Principal, privileged bool) bool {
	return privileged || a.Kind == streamdb.AccessWebhookPublic || (a.Owner != "" && a.Owner == p.String())
}

// Bucket returns the bucket of key.
func (s *Source) Bucket(key string) *Bucket {
	for i := range s.Buckets {
		if s.Buckets[i].Key == key {
			return &s.Buckets[i]
		}
	}
	return nil
}

// Contract renders the source as Electric's WebhookSourceContract (what GET
// /_electric/webhook-sources lists), plus the scheme and visibility. The secret is never
// part of it.
func (s *Source) Contract() []byte {
	var o rawjson.Object
	o.String("webhookKey", s.WebhookKey).String("sourceType", "webhook").String("endpointKey", s.EndpointKey).
		String("status", s.Status).String("label", s.Label)
	if s.Description != "" {
		o.String("description", s.Description)
	}
	o.Bool("agentVisible", s.AgentVisible)
	buckets := s.Buckets
	if buckets == nil {
		buckets = []Bucket{}
	}
	b, _ := json.Marshal(buckets)
	o.Raw("buckets", b)
	if !s.UpdatedAt.IsZero() {
		o.String("updatedAt", s.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	o.Int("revision", int64(s.Revision))
	o.String("scheme", s.Scheme).Bool("public", s.Public)
	return o.Bytes()
}
