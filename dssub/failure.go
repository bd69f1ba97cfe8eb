package dssub

import (
	"github.com/entityd/entityd/internal/ratelog"
)

// codeUnavailable answers requests while the service cannot serve (not started yet);
// database outages get the same code from the api package's failure answers.
const codeUnavailable = "SERVICE_UNAVAILABLE"

// loopLogs rate-limit the warnings of the background loops, which would otherwise log
// on every tick while the database is away: one line per kind per interval, with the
// count held back.
type loopLogs struct {
	keys, reload, evaluate, link, reconcile, poll, record, handBack ratelog.Limiter
}
