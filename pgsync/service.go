package pgsync

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/entityd/entityd/streamdb"
)

// Prefix is where pg-sync streams live, as Electric's runtime names them.
const Prefix = "/_electric/pg-sync/"

// ChangeType is the State Protocol type of a pg-sync stream's events.
const ChangeType = "pg_sync_change"

// Options configure the service; zero values take the defaults.
type Options struct {
	// Tables is the allow-list of observable tables ("schema.table" or "table"); empty
	// turns the feature off (registrations are refused with ErrDisabled).
	Tables []string
	// Slot names the logical replication slot (default "entityd_pgsync_<database>").
	Slot string
	// Publication names the publication of the observed tables (default "entityd_pgsync").
	Publication string
	// SlotIdle drops the slot when no observation has existed for this long, so that an
	// unused slot holds no WAL (default 10m).
	SlotIdle time.Duration
	// SourceIdle drops an observation nobody registered again for this long (the
	// runtime registers on every wake; default 7 days).
	SourceIdle time.Duration
	// LeaseRetry is how often a process without the slot tries to take it (default 1s):
	// the longest a switch of holder waits after the old holder's session ended.
	LeaseRetry time.Duration
	// StatusInterval is how often the slot is told how far the streams hold the changes
	// and the metrics are sampled (default 1s).
	StatusInterval time.Duration
	// MaxPerPrincipal caps the observations one principal has (default 1,000).
	MaxPerPrincipal int
	Logger          *zap.Logger
}

func (o *Options) setDefaults() {
	if o.Publication == "" {
		o.Publication = "entityd_pgsync"
	}
	if o.SlotIdle <= 0 {
		o.SlotIdle = 10 * time.Minute
	}
	if o.SourceIdle <= 0 {
		o.SourceIdle = 7 * 24 * time.Hour
	}
	if o.LeaseRetry <= 0 {
		o.LeaseRetry = time.Second
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = time.Second
	}
	if o.MaxPerPrincipal <= 0 {
		o.MaxPerPrincipal = 1000
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// Service is the pgSync observations of one server process: registrations, and the
// replicator loop (Start/Stop), which streams while this process holds the slot.
type Service struct {
	pool    *pgxpool.Pool
	streams *streamdb.Store
	opts    Options
	allowed map[string]Table
	log     *zap.Logger
	poke    chan struct{}

	mu        sync.Mutex
	published map[string]bool // tables known to be in the publication

	cancel context.CancelFunc
	done   chan struct{}
}

// New returns the service; it checks the allow-list (never entityd's own tables).
func New(pool *pgxpool.Pool, streams *streamdb.Store, opts Options) (*Service, error) {
	opts.setDefaults()
	allowed, err := ParseAllowList(opts.Tables)
	if err != nil {
		return nil, err
	}
	if opts.Slot != "" && !slotName(opts.Slot) {
		return nil, errors.New("pgsync: the slot name must be 1-63 of a-z, 0-9 and _")
	}
	if !identifier(opts.Publication) {
		return nil, errors.New("pgsync: the publication name must be a plain identifier")
	}
	return &Service{pool: pool, streams: streams, opts: opts, allowed: allowed, log: opts.Logger.Named("pgsync"),
		poke: make(chan struct{}, 1), published: map[string]bool{}}, nil
}

// Enabled reports whether any table is observable.
func (s *Service) Enabled() bool { return len(s.allowed) > 0 }

// Slot is the replication slot's name (resolved at Start when defaulted).
func (s *Service) Slot() string { return s.opts.Slot }

// Start resolves the slot's name, warns about an unbounded slot, and starts the
// replicator loop. A server whose Postgres has no logical decoding starts all the same:
// registrations answer ErrUnavailable.
func (s *Service) Start(ctx context.Context) error {
	if s.opts.Slot == "" {
		var db string
		if err := s.pool.QueryRow(ctx, sqlCurrentDatabase).Scan(&db); err != nil {
			return err
		}
		s.opts.Slot = defaultSlot(db)
	}
	if s.Enabled() {
		s.checkSettings(ctx)
	}
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if s.Enabled() {
			s.run(ctx)
		}
	}()
	return nil
}

// Stop ends the replicator (the slot stays, for the next holder to continue from).
func (s *Service) Stop(context.Context) {
	if s.cancel == nil {
		return
	}
	s.cancel()
	<-s.done
}

// checkSettings logs what an operator must fix: no logical decoding, or a slot that
// may hold WAL without limit while no server runs.
func (s *Service) checkSettings(ctx context.Context) {
	var level, keep string
	if err := s.pool.QueryRow(ctx, sqlWalLevel).Scan(&level); err != nil {
		return
	}
	if level != "logical" {
		s.log.Error("pgSync observations are configured (--pg-sync-tables) but Postgres runs with wal_level=" + level +
			"; set wal_level=logical and restart Postgres (see docs/DEPLOYING.md). Registrations are refused until then.")
		return
	}
	if err := s.pool.QueryRow(ctx, sqlMaxSlotWalKeepSize).Scan(&keep); err == nil && keep == "-1" {
		s.log.Warn("max_slot_wal_keep_size is unlimited: while no entityd runs, the pgSync slot keeps WAL without bound; set it (see docs/DEPLOYING.md)",
			zap.String("slot", s.opts.Slot))
	}
}

func (s *Service) wake() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// defaultSlot is entityd_pgsync_<database>, in the characters a slot name allows.
func defaultSlot(db string) string {
	var b strings.Builder
	b.WriteString("entityd_pgsync_")
	for _, r := range strings.ToLower(db) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > MaxIdentifier {
		name = name[:MaxIdentifier]
	}
	return name
}

func slotName(s string) bool {
	if s == "" || len(s) > MaxIdentifier {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
