package webhooksrc

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/streamdb"
)

// Options bound deliveries; zero values take the defaults, negative ones turn a budget
// off.
type Options struct {
	// MaxDeliveryBytes caps one delivery's body (413 beyond; 1 MiB).
	MaxDeliveryBytes int64
	// DeliveriesPerMinute and DeliveryBytesPerMinute are each tenant's (source owner's)
	// budget across its sources, per process (429 beyond; 600 and 64 MiB).
	DeliveriesPerMinute    int64
	DeliveryBytesPerMinute int64
	// MaxBucketStreams bounds the bucket streams of one source (1,000): subscriptions
	// (by any reader of a public source) and deliveries make them.
	MaxBucketStreams int
}

func (o *Options) setDefaults() {
	if o.MaxDeliveryBytes <= 0 {
		o.MaxDeliveryBytes = 1 << 20
	}
	if o.DeliveriesPerMinute == 0 {
		o.DeliveriesPerMinute = 600
	}
	if o.DeliveryBytesPerMinute == 0 {
		o.DeliveryBytesPerMinute = 64 << 20
	}
	if o.MaxBucketStreams <= 0 {
		o.MaxBucketStreams = DefaultMaxBucketStreams
	}
}

// DefaultMaxBucketStreams is Options.MaxBucketStreams's default.
const DefaultMaxBucketStreams = 1000

// Errors of the store.
var (
	ErrNotFound = errors.New("webhooksrc: no such webhook source")
	// ErrExists: the webhook key or the endpoint key is taken (by any source, revoked
	// ones included: a key never changes hands).
	ErrExists = errors.New("webhooksrc: the webhook key or endpoint key is taken")
	// ErrStreamTaken: a stream that is not the source's is at its path.
	ErrStreamTaken = errors.New("webhooksrc: a stream that is not this source's is at its path")
	// ErrTooManyBuckets: the source has Options.MaxBucketStreams bucket streams.
	ErrTooManyBuckets = errors.New("webhooksrc: the source has the most bucket streams allowed")
)

// Service stores the sources and appends their deliveries.
type Service struct {
	streams *streamdb.Store
	db      streamdb.DB
	opts    Options
	budget  *budget
	schemas *schemas.Cache
}

// New returns the service over the store.
func New(streams *streamdb.Store, opts Options) *Service {
	opts.setDefaults()
	return &Service{streams: streams, db: streams.DB(), opts: opts,
		budget: newBudget(max(opts.DeliveriesPerMinute, 0), max(opts.DeliveryBytesPerMinute, 0)), schemas: schemas.NewCache()}
}

// Options are the service's bounds, defaults applied.
func (s *Service) Options() Options { return s.opts }

// Schemas compiles the buckets' params schemas once.
func (s *Service) Schemas() *schemas.Cache { return s.schemas }

// Admit charges one delivery of n bytes to the source's tenant (its owner); false: the
// budget is spent, retry after the duration.
func (s *Service) Admit(src *Source, n int64) (bool, time.Duration) {
	return s.budget.take(src.Owner, n, time.Now())
}

// Create stores a new source and its root stream.
func (s *Service) Create(ctx context.Context, src *Source) error {
	buckets, _ := json.Marshal(src.Buckets)
	if src.Buckets == nil {
		buckets = []byte("[]")
	}
	tag, err := s.db.Exec(ctx, sqlInsert, src.WebhookKey, src.EndpointKey, src.Owner, src.Label, src.Description,
		src.Scheme, src.Secret, src.AgentVisible, src.Public, string(buckets))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrExists
	}
	_, err = s.EnsureStream(ctx, src, "")
	return err
}

// Get returns the source of a webhook key.
func (s *Service) Get(ctx context.Context, webhookKey string) (*Source, error) {
	return scanOne(s.db.QueryRow(ctx, sqlByKey, webhookKey))
}

// ByEndpoint returns the source of an endpoint key.
func (s *Service) ByEndpoint(ctx context.Context, endpointKey string) (*Source, error) {
	return scanOne(s.db.QueryRow(ctx, sqlByEndpoint, endpointKey))
}

// Visible lists, by key, at most limit active and agent-visible sources p may read
// (Readable's rule).
func (s *Service) Visible(ctx context.Context, p principal.Principal, privileged bool, limit int) ([]*Source, error) {
	rows, err := s.db.Query(ctx, sqlVisible, p.String(), privileged, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Source
	for rows.Next() {
		src, err := scan(rows)
		if err != nil {
			return nil, err
		}
		src.Secret = nil
		out = append(out, src)
	}
	return out, rows.Err()
}

// SetStatus changes a source's status (revoking forgets its secret); ErrNotFound when
// there is none or it is revoked already.
func (s *Service) SetStatus(ctx context.Context, webhookKey, status string) error {
	tag, err := s.db.Exec(ctx, sqlSetStatus, webhookKey, status)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// CountOwnedBy is how many sources (not revoked) p owns, counted up to limit.
func (s *Service) CountOwnedBy(ctx context.Context, p string, limit int) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, sqlCountOwnedBy, p, limit).Scan(&n)
	return n, err
}

// EnsureStream makes the stream of a bucket path of src ("" for the root) if it is
// missing, recording the source's access, and returns its path. A new bucket stream
// takes one of the source's Options.MaxBucketStreams (ErrTooManyBuckets beyond).
func (s *Service) EnsureStream(ctx context.Context, src *Source, bucket string) (string, error) {
	path := src.BucketStreamPath(bucket)
	want := src.Access()
	if bucket != "" {
		if _, err := s.streams.Identify(ctx, path); err == nil {
			return path, nil
		}
		tag, err := s.db.Exec(ctx, sqlTakeBucket, src.EndpointKey, s.opts.MaxBucketStreams)
		if err != nil {
			return "", err
		}
		if tag.RowsAffected() == 0 {
			return "", ErrTooManyBuckets
		}
	}
	_, created, err := s.streams.Create(ctx, path, streamdb.CreateConfig{ContentType: "application/json", Access: want,
		CheckExisting: func(m *streamdb.Meta) error {
			if m.Access.Kind != want.Kind || m.Access.Owner != want.Owner {
				return ErrStreamTaken
			}
			return nil
		}}, nil)
	if bucket != "" && !created {
		// made by someone else meanwhile, or not at all: the slot goes back
		_, _ = s.db.Exec(context.WithoutCancel(ctx), sqlGiveBucket, src.EndpointKey)
	}
	return path, err
}

// dedupeHash is the same for every delivery: a redelivery is the same delivery whatever
// its body says (GitHub resends the same body; a scheme's id is what names a delivery).
var dedupeHash = sha256.Sum256([]byte("webhook-delivery"))

// Deliver appends a verified delivery to its stream once: a delivery id already
// appended there appends nothing (duplicate true), so it wakes nothing either.
func (s *Service) Deliver(ctx context.Context, src *Source, d *Received) (duplicate bool, err error) {
	ev, err := src.Event(d)
	if err != nil {
		return false, err
	}
	path := src.BucketStreamPath(d.Bucket)
	req := func() *streamdb.AppendRequest {
		return &streamdb.AppendRequest{Path: path, ContentType: "application/json", Messages: [][]byte{ev},
			Dedupe: &streamdb.Dedupe{Key: "webhook-delivery:" + d.ID, Hash: dedupeHash[:]}}
	}
	res, err := s.streams.Append(ctx, req())
	if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
		if _, err := s.EnsureStream(ctx, src, d.Bucket); err != nil {
			return false, err
		}
		res, err = s.streams.Append(ctx, req())
	}
	if err != nil {
		return false, fmt.Errorf("webhooksrc: append to %s: %w", path, err)
	}
	return res.Duplicate, nil
}

type row interface{ Scan(dest ...any) error }

func scanOne(r row) (*Source, error) {
	src, err := scan(r)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return src, err
}

func scan(r row) (*Source, error) {
	var src Source
	var buckets []byte
	if err := r.Scan(&src.WebhookKey, &src.EndpointKey, &src.Owner, &src.Label, &src.Description, &src.Scheme, &src.Secret,
		&src.Status, &src.AgentVisible, &src.Public, &buckets, &src.Revision, &src.UpdatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(buckets, &src.Buckets); err != nil {
		return nil, err
	}
	return &src, nil
}
