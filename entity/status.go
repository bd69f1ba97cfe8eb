package entity

import "strings"

// Status is an entity's lifecycle state: the one status machine of entityd. The entity
// package moves it (signals, sends that resume), wake delivers only to Deliverable
// entities, and SQL that filters by status takes its lists from here.
type Status string

// Statuses of the entity status machine.
const (
	StatusRunning  Status = "running"
	StatusIdle     Status = "idle"
	StatusPaused   Status = "paused"
	StatusStopping Status = "stopping"
	StatusStopped  Status = "stopped"
	StatusKilled   Status = "killed"
)

// Statuses lists every status.
var Statuses = []Status{StatusRunning, StatusIdle, StatusPaused, StatusStopping, StatusStopped, StatusKilled}

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// Terminal reports whether the entity has ended and can no longer change status.
func (s Status) Terminal() bool { return s == StatusStopped || s == StatusKilled }

// AcceptsWrites reports whether sends and other writes are allowed.
func (s Status) AcceptsWrites() bool {
	return s != StatusStopping && !s.Terminal()
}

// Deliverable reports whether the entity's handler is woken for new work: not while
// paused, and never after it ended (a stopping entity still gets the SIGTERM wake).
func (s Status) Deliverable() bool { return s != StatusPaused && !s.Terminal() }

// Next is the status a signal leads to from s, and whether the signal changed or was
// handled by the status machine. withHandler is true when a Go handler runs the entity:
// SIGTERM then asks it to finish (stopping) rather than stopping it at once.
func (s Status) Next(signal string, withHandler bool) (next Status, handled bool) {
	if s == StatusPaused && signal != SIGKILL && signal != SIGCONT && signal != SIGTERM {
		return s, false // a paused entity ignores everything but kill, term and cont
	}
	switch signal {
	case SIGKILL:
		return StatusKilled, true
	case SIGTERM:
		if s == StatusRunning || s == StatusStopping || (withHandler && s == StatusIdle) {
			return StatusStopping, true
		}
		return StatusStopped, true
	case SIGSTOP:
		if s == StatusIdle || s == StatusRunning {
			return StatusPaused, true
		}
		return s, false
	case SIGCONT:
		if s == StatusPaused {
			return StatusIdle, true
		}
		return s, false
	}
	// SIGINT, SIGHUP, SIGUSR are for the entity's handler; the status does not change.
	return s, false
}

// statusesWhere lists the statuses for which keep is true, as strings (for SQL
// parameters: status = ANY($n), status <> ALL($n)).
func statusesWhere(keep func(Status) bool) []string {
	var out []string
	for _, s := range Statuses {
		if keep(s) {
			out = append(out, string(s))
		}
	}
	return out
}

// Undeliverable lists the statuses whose entities get no handler runs.
func Undeliverable() []string { return statusesWhere(func(s Status) bool { return !s.Deliverable() }) }

// Ended lists the terminal statuses.
func Ended() []string { return statusesWhere(Status.Terminal) }

// NotAcceptingWrites lists the statuses that refuse sends.
func NotAcceptingWrites() []string {
	return statusesWhere(func(s Status) bool { return !s.AcceptsWrites() })
}

// sqlArray renders fixed identifiers (statuses) as a Postgres array literal's text.
func sqlArray(items []string) string { return "{" + strings.Join(items, ",") + "}" }
