package external

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns the runners table.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("external", queryFiles)

var (
	sqlInsertRunner   = queries.Get("InsertRunner")
	sqlUpdateRunner   = queries.Get("UpdateRunner")
	sqlSelectRunner   = queries.Get("SelectRunner")
	sqlListRunners    = queries.Get("ListRunners")
	sqlHeartbeat      = queries.Get("Heartbeat")
	sqlSetAdminStatus = queries.Get("SetAdminStatus")
	sqlCountRunnersOf = queries.Get("CountRunnersOf")
)
