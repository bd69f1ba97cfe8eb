package schedule

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns cron_streams and cron_schedules.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("schedule", queryFiles)

var (
	sqlEnsureCronStream     = queries.Get("EnsureCronStream")
	sqlDueCronStreams       = queries.Get("DueCronStreams")
	sqlNextCronDue          = queries.Get("NextCronDue")
	sqlLockCronStream       = queries.Get("LockCronStream")
	sqlAdvanceCronStream    = queries.Get("AdvanceCronStream")
	sqlDropCronStream       = queries.Get("DropCronStream")
	sqlStopCronStream       = queries.Get("StopCronStream")
	sqlUpsertCronSchedule   = queries.Get("UpsertCronSchedule")
	sqlDeleteCronSchedule   = queries.Get("DeleteCronSchedule")
	sqlCountCronSchedulesBy = queries.Get("CountCronSchedulesBy")
	sqlHasCronSchedule      = queries.Get("HasCronSchedule")
)
