package dssub

import (
	"net/http"

	"github.com/entityd/entityd/internal/dberr"
	"github.com/entityd/entityd/internal/ratelog"
)

// codeUnavailable answers requests while the database cannot be reached (the main API
// answers the same, with Retry-After).
const codeUnavailable = "SERVICE_UNAVAILABLE"

// storeFailure turns a database error into the answer the client should see: 503 with
// Retry-After while the database is away (the request may be retried as is), 400 when
// the database refused a value of the request; nil for anything else (a 500).
func storeFailure(err error) *apiError {
	switch {
	case dberr.Unavailable(err):
		return fail(http.StatusServiceUnavailable, codeUnavailable, "The database is unavailable; retry later")
	case dberr.Refused(err):
		return fail(http.StatusBadRequest, codeInvalidRequest, "A value in the request cannot be stored")
	}
	return nil
}

// loopLogs rate-limit the warnings of the background loops (and of 503 answers), which
// would otherwise log on every tick or request while the database is away: one line per
// kind per interval, with the count held back.
type loopLogs struct {
	request, keys, reload, evaluate, link, reconcile, poll, record, handBack ratelog.Limiter
}
