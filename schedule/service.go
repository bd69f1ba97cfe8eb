// Package schedule serves Electric's schedules and cron observations: cron streams
// (/_cron/<spec>) and their ticks, fired by every server process from cron_streams; cron
// schedules of entities (a manifest entry naming a cron stream, kept in cron_schedules);
// and future_send schedules, which are inbox's delayed sends with an owner.
package schedule

import (
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/streamdb"
)

// IdleCron is how long a cron stream keeps ticking after it was last ensured when no
// cron schedule uses it: observers ensure it on every wake, so one nobody observes any
// more stops (ensuring it again starts it from its next tick). A variable for tests.
var IdleCron = 7 * 24 * time.Hour

// Service is the schedules of one server process.
type Service struct {
	streams  *streamdb.Store
	registry *entity.Registry
	sender   *inbox.Sender
	log      *zap.Logger
	poke     chan struct{}
	now      func() time.Time
}

// New returns the service.
func New(streams *streamdb.Store, registry *entity.Registry, sender *inbox.Sender, log *zap.Logger) *Service {
	return &Service{streams: streams, registry: registry, sender: sender, log: log, poke: make(chan struct{}, 1),
		now: streams.Clock().Now}
}

func (s *Service) pokeCron() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}
