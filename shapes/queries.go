package shapes

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns shape_log and shape_state, and reads the
// shape rows entity publishes.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("shapes", queryFiles)

var (
	sqlHorizon        = queries.Get("Horizon")
	sqlState          = queries.Get("State")
	sqlSnapshot       = queries.Get("Snapshot")
	sqlChangesSince   = queries.Get("ChangesSince")
	sqlPageChanges    = queries.Get("PageChanges")
	sqlFrontier       = queries.Get("Frontier")
	sqlEntityRows     = queries.Get("EntityRows")
	sqlEntityTypeRows = queries.Get("EntityTypeRows")
	sqlTrimLog        = queries.Get("TrimLog")

	sqlRunnerRows            = queries.Get("RunnerRows")
	sqlRunnerDiagnosticsRows = queries.Get("RunnerDiagnosticsRows")
	sqlUserRows              = queries.Get("UserRows")
	sqlEntityPermissionRows  = queries.Get("EntityPermissionRows")
)
