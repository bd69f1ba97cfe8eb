package wakereg

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns the tables they name (migrations.Owners).
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("wakereg", queryFiles)

var (
	// registration.go
	sqlInsert                 = queries.Get("Insert")
	sqlCopyForFork            = queries.Get("CopyForFork")
	sqlDeleteManifestOthers   = queries.Get("DeleteManifestOthers")
	sqlDeleteManifest         = queries.Get("DeleteManifest")
	sqlDeleteSubscriberSource = queries.Get("DeleteSubscriberSource")
	sqlDeleteEntity           = queries.Get("DeleteEntity")
	sqlCountCreatedBy         = queries.Get("CountCreatedBy")

	// evaluate.go
	sqlEnsureSource        = queries.Get("EnsureSource")
	sqlSourceCursor        = queries.Get("SourceCursor")
	sqlLockSource          = queries.Get("LockSource")
	sqlRegistrationsOf     = queries.Get("RegistrationsOf")
	sqlDeleteSource        = queries.Get("DeleteSource")
	sqlMoveCursor          = queries.Get("MoveCursor")
	sqlSaveState           = queries.Get("SaveState")
	sqlDeleteRegistrations = queries.Get("DeleteRegistrations")
	sqlDeleteSubscriber    = queries.Get("DeleteSubscriber")

	// service.go
	sqlSources = queries.Get("Sources")
	sqlPending = queries.Get("Pending")
)
