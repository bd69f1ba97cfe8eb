package mcpserve

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns mcp_sessions.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("mcpserve", queryFiles)

var (
	sqlSaveSession    = queries.Get("SaveSession")
	sqlLoadSession    = queries.Get("LoadSession")
	sqlForgetSession  = queries.Get("ForgetSession")
	sqlTouchSessions  = queries.Get("TouchSessions")
	sqlExpireSessions = queries.Get("ExpireSessions")
)
