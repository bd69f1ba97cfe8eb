package pgsync

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns pg_sync_sources and pg_sync_state.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("pgsync", queryFiles)

var (
	// sources.go
	sqlUpsertSource    = queries.Get("UpsertSource")
	sqlSourcesOf       = queries.Get("SourcesOf")
	sqlDeleteSource    = queries.Get("DeleteSource")
	sqlCountSources    = queries.Get("CountSources")
	sqlCountSourcesBy  = queries.Get("CountSourcesBy")
	sqlDropIdleSources = queries.Get("DropIdleSources")

	// replicator.go, catalog.go
	sqlAppliedLSN          = queries.Get("AppliedLSN")
	sqlSaveAppliedLSN      = queries.Get("SaveAppliedLSN")
	sqlWalLevel            = queries.Get("WalLevel")
	sqlMaxSlotWalKeepSize  = queries.Get("MaxSlotWalKeepSize")
	sqlTableInfo           = queries.Get("TableInfo")
	sqlPublicationExists   = queries.Get("PublicationExists")
	sqlPublicationHasTable = queries.Get("PublicationHasTable")
	sqlLockPublication     = queries.Get("LockPublication")
	sqlTryLease            = queries.Get("TryLease")
	sqlReleaseLease        = queries.Get("ReleaseLease")
	sqlSlotInfo            = queries.Get("SlotInfo")
	sqlDropSlot            = queries.Get("DropSlot")
	sqlCurrentDatabase     = queries.Get("CurrentDatabase")
)
