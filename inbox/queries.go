package inbox

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns the tables they name (migrations.Owners),
// and no other package names them.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("inbox", queryFiles)

// One variable per query, so a name that is not in the files stops the package at init.
var (
	// delayed.go
	sqlInsertDelayed    = queries.Get("InsertDelayed")
	sqlCancelScheduled  = queries.Get("CancelScheduled")
	sqlInsertScheduled  = queries.Get("InsertScheduled")
	sqlCountScheduledBy = queries.Get("CountScheduledBy")
	sqlHasScheduled     = queries.Get("HasScheduled")
	sqlDueDelayed       = queries.Get("DueDelayed")
	sqlNextDelayedDue   = queries.Get("NextDelayedDue")
	sqlLockDelayed      = queries.Get("LockDelayed")
	sqlFailDelayed      = queries.Get("FailDelayed")
	sqlDeleteDelayed    = queries.Get("DeleteDelayed")
	sqlGiveUpDelayed    = queries.Get("GiveUpDelayed")

	// retention.go
	sqlPurgeDelayed = queries.Get("PurgeDelayed")
)
