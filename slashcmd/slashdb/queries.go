package slashdb

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns the tables they name (migrations.Owners),
// and no other package names them.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("slashcmd/slashdb", queryFiles)

// One variable per query, so a name that is not in the files stops the package at init.
var (
	// layer_rows.go
	sqlSelectLayers = queries.Get("SelectLayers")
	sqlUpsertLayers = queries.Get("UpsertLayers")
	sqlDeleteLayers = queries.Get("DeleteLayers")

	// fork.go
	sqlCopyCommands = queries.Get("CopyCommands")
	sqlCopyLayers   = queries.Get("CopyLayers")

	// seed.go
	sqlSeedStatic = queries.Get("SeedStatic")

	// snapshot.go
	sqlCollectionTail = queries.Get("CollectionTail")

	// store.go
	sqlLockEntityCommands = queries.Get("LockEntityCommands")
	sqlSelectCommands     = queries.Get("SelectCommands")
	sqlLockCommands       = queries.Get("LockCommands")
	sqlDeleteCommand      = queries.Get("DeleteCommand")
	sqlUpsertCommand      = queries.Get("UpsertCommand")
)
