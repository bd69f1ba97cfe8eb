package attachment

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns the attachments table.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("attachment", queryFiles)

var (
	sqlInsertAttachment = queries.Get("InsertAttachment")
	sqlGetAttachment    = queries.Get("GetAttachment")
	sqlDeleteAttachment = queries.Get("DeleteAttachment")
	sqlUsageBy          = queries.Get("UsageBy")
	sqlAttachmentsOf    = queries.Get("AttachmentsOf")
)
