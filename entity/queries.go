package entity

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns the tables they name (migrations.Owners),
// and no other package names them.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("entity", queryFiles)

// One variable per query, so a name that is not in the files stops the package at init.
var (
	// entities.go
	sqlEntityExists    = queries.Get("EntityExists")
	sqlEntityCreatedAt = queries.Get("EntityCreatedAt")
	sqlFinishStop      = queries.Get("FinishStop")
	sqlUnpause         = queries.Get("Unpause")
	sqlCurrentTxid     = queries.Get("CurrentTxid")

	// reconcile.go
	sqlEntitiesBehindType  = queries.Get("EntitiesBehindType")
	sqlSetCommandsRevision = queries.Get("SetCommandsRevision")

	// signal.go
	sqlSetStatus = queries.Get("SetStatus")

	// tags.go
	sqlSetTags = queries.Get("SetTags")

	// types.go
	sqlDeleteType             = queries.Get("DeleteType")
	sqlInsertEntity           = queries.Get("InsertEntity")
	sqlSelectEntity           = queries.Get("SelectEntity")
	sqlSelectEntities         = queries.Get("SelectEntities")
	sqlLockEntity             = queries.Get("LockEntity")
	sqlListEntities           = queries.Get("ListEntities")
	sqlUpsertType             = queries.Get("UpsertType")
	sqlSelectType             = queries.Get("SelectType")
	sqlSelectTypes            = queries.Get("SelectTypes")
	sqlSelectDispatchingTypes = queries.Get("SelectDispatchingTypes")
	sqlCountTypesRegisteredBy = queries.Get("CountTypesRegisteredBy")
	sqlLockType               = queries.Get("LockType")
	sqlSetTypeSchemas         = queries.Get("SetTypeSchemas")
	sqlSendAdmission          = queries.GetWith("SendAdmission", map[string]string{
		"statuses": sqlArray(append(NotAcceptingWrites(), string(StatusPaused))),
	})
)

// fork.go
var (
	sqlForkSubtree        = queries.Get("ForkSubtree")
	sqlLockForkSubtree    = queries.Get("LockForkSubtree")
	sqlTakeForkLocks      = queries.Get("TakeForkLocks")
	sqlReleaseForkLocks   = queries.Get("ReleaseForkLocks")
	sqlInsertForkedEntity = queries.Get("InsertForkedEntity")
)
