package shapes

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/ratelog"
	"github.com/entityd/entityd/streamdb"
)

// Options tune the shape endpoint.
type Options struct {
	// LongPoll is how long a live request waits for a change its caller may see before
	// it answers up-to-date with nothing new (default 20s).
	LongPoll time.Duration
	// PollInterval is how often the process looks for new changes while live requests
	// wait (default 100ms).
	PollInterval time.Duration
	// ChunkRows caps the changes of one response (default 1000).
	ChunkRows int
	// SnapshotRows caps the rows one response of an initial snapshot reads (default
	// 10,000): a larger shape comes in several responses, each continuing after the
	// last key of the one before.
	SnapshotRows int
	// Live, when closed, ends every live request at once (the server is shutting down).
	Live   <-chan struct{}
	Logger *zap.Logger
	// Scope returns which rows of table the request's caller may see: given a
	// response's rows, the primary keys of the visible ones (entities it may read, types
	// it may spawn, its own runners). Nil shows every row.
	Scope func(ctx context.Context, table string) (func(ctx context.Context, rows []Row) (map[string]bool, error), error)
}

// Row is a row a response would show: its primary key and every stored column
// (text-encoded, nil for NULL; a delete's is the row's last value when the log kept it).
type Row struct {
	Key     string
	Values  map[string]*string
	Deleted bool // the change is the row's delete
}

// Service serves shapes; it is a lifecycle service (its watcher runs while started).
type Service struct {
	db   streamdb.DB
	opts Options
	log  *zap.Logger
	logs ratelog.Limiter
	w    *watcher
	loop *lifecycle.Every
}

// New returns a Service reading through db.
func New(db streamdb.DB, opts Options) *Service {
	if opts.LongPoll <= 0 {
		opts.LongPoll = 20 * time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 100 * time.Millisecond
	}
	if opts.ChunkRows <= 0 {
		opts.ChunkRows = 1000
	}
	if opts.SnapshotRows <= 0 {
		opts.SnapshotRows = 10000
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Service{db: db, opts: opts, log: log.Named("shapes")}
	s.w = newWatcher(s, opts.PollInterval)
	s.loop = s.w.loop()
	return s
}

// Start starts the watcher.
func (s *Service) Start(ctx context.Context) error { return s.loop.Start(ctx) }

// Stop stops it.
func (s *Service) Stop(ctx context.Context) { s.loop.Stop(ctx) }

// Trim drops changes older than keep (retention); clients behind them start again.
func (s *Service) Trim(ctx context.Context, keep time.Duration) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, sqlTrimLog, keep).Scan(&n)
	return n, err
}
