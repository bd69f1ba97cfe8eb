package webhooksrc

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns webhook_sources.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("webhooksrc", queryFiles)

var (
	sqlInsert       = queries.Get("Insert")
	sqlByKey        = queries.Get("ByKey")
	sqlByEndpoint   = queries.Get("ByEndpoint")
	sqlVisible      = queries.Get("Visible")
	sqlSetStatus    = queries.Get("SetStatus")
	sqlCountOwnedBy = queries.Get("CountOwnedBy")
	sqlTakeBucket   = queries.Get("TakeBucketSlot")
	sqlGiveBucket   = queries.Get("GiveBucketSlot")
)
