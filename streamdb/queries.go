package streamdb

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns the tables they name (migrations.Owners),
// and no other package names them.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("streamdb", queryFiles)

// One variable per query, so a name that is not in the files stops the package at init.
var (
	// append.go
	sqlSelectProducers = queries.Get("SelectProducers")
	sqlSelectDedupe    = queries.Get("SelectDedupe")
	sqlInsertMessages  = queries.Get("InsertMessages")
	sqlUpdateTails     = queries.Get("UpdateTails")
	sqlUpsertProducers = queries.Get("UpsertProducers")
	sqlInsertDedupe    = queries.Get("InsertDedupe")

	// create.go
	sqlLockPath     = queries.Get("LockPath")
	sqlInsertStream = queries.Get("InsertStream")
	sqlRefFork      = queries.Get("RefFork")
	sqlOffsetAt     = queries.Get("OffsetAt")
	sqlMessageAt    = queries.Get("MessageAt")

	// ready.go
	sqlAssignXid = queries.Get("AssignXid")

	// delete.go
	sqlSoftDelete      = queries.Get("SoftDelete")
	sqlDeleteMessages  = queries.Get("DeleteMessages")
	sqlDeleteProducers = queries.Get("DeleteProducers")
	sqlDeleteDedupe    = queries.Get("DeleteDedupe")
	sqlDeleteStream    = queries.Get("DeleteStream")
	sqlUnrefFork       = queries.Get("UnrefFork")
	sqlExpiredStreams  = queries.Get("ExpiredStreams")

	// listen.go
	sqlNotify = queries.Get("Notify")

	// lookups.go
	sqlLastEvent  = queries.Get("LastEvent")
	sqlDedupeHash = queries.Get("DedupeHash")

	// peers.go
	sqlRegisterListener   = queries.Get("RegisterListener")
	sqlPeers              = queries.Get("Peers")
	sqlUnregisterListener = queries.Get("UnregisterListener")

	// read.go
	sqlTouch      = queries.Get("Touch")
	sqlReadRange  = queries.Get("ReadRange")
	sqlFreshState = queries.Get("FreshState")

	// retention.go
	sqlPurgeDedupe = queries.Get("PurgeDedupe")
	sqlLockStreams = queries.Get("LockStreams")
	sqlLockStream  = queries.Get("LockStream")
	sqlMetaByID    = queries.Get("MetaByID")
	sqlMetaByPath  = queries.Get("MetaByPath")
	sqlIdentify    = queries.Get("Identify")
	sqlCountOwned  = queries.Get("CountOwned")
)
