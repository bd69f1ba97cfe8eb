package wake

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns the tables they name (migrations.Owners),
// and no other package names them.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("wake", queryFiles)

// One variable per query, so a name that is not in the files stops the package at init.
var (
	// ack.go
	sqlAdvanceScan   = queries.Get("AdvanceScan")
	sqlDeleteHeld    = queries.Get("DeleteHeld")
	sqlInsertHeld    = queries.Get("InsertHeld")
	sqlSetRetry      = queries.Get("SetRetry")
	sqlInsertFailure = queries.Get("InsertFailure")
	sqlCheckFence    = queries.Get("CheckFence")

	// fork.go
	sqlForkScan = queries.Get("ForkScan")
	sqlForkHeld = queries.Get("ForkHeld")

	// claim.go
	sqlRegisterHolder = queries.Get("RegisterHolder")
	sqlHeartbeat      = queries.Get("Heartbeat")
	sqlReleaseHeldBy  = queries.Get("ReleaseHeldBy")
	sqlDeleteHolder   = queries.Get("DeleteHolder")
	sqlClaim          = queries.Get("Claim")
	sqlRelease        = queries.Get("Release")
	sqlPendingUnheld  = queries.Get("PendingUnheld")

	// dispatcher.go
	sqlResolveStreams = queries.Get("ResolveStreams")

	// observe.go
	sqlObserve              = queries.Get("Observe")
	sqlUnobserve            = queries.Get("Unobserve")
	sqlObserversOf          = queries.Get("ObserversOf")
	sqlDeleteObservationsOf = queries.Get("DeleteObservationsOf")

	// retention.go
	sqlPurgeFailures = queries.Get("PurgeFailures")

	// status.go
	sqlStatusOf   = queries.Get("StatusOf")
	sqlFailuresOf = queries.Get("FailuresOf")

	// timers.go
	sqlSchedule     = queries.Get("Schedule")
	sqlDueTimers    = queries.Get("DueTimers")
	sqlDeleteTimer  = queries.Get("DeleteTimer")
	sqlNextTimerDue = queries.Get("NextTimerDue")

	// trouble.go
	sqlNoteError = queries.Get("NoteError")

	// worker.go
	sqlLoadState      = queries.Get("LoadState")
	sqlHeldMessages   = queries.Get("HeldMessages")
	sqlFenceAdmission = queries.Get("FenceAdmission")
)
