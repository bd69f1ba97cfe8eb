package authz

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns entity_grants, type_grants, stream_grants,
// users and shared_state_links.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("authz", queryFiles)

var (
	sqlInsertEntityGrant = queries.Get("InsertEntityGrant")
	sqlListEntityGrants  = queries.Get("ListEntityGrants")
	sqlDeleteEntityGrant = queries.Get("DeleteEntityGrant")
	sqlCopyGrantsToChild = queries.Get("CopyGrantsToChild")
	sqlInsertTypeGrant   = queries.Get("InsertTypeGrant")
	sqlListTypeGrants    = queries.Get("ListTypeGrants")
	sqlDeleteTypeGrant   = queries.Get("DeleteTypeGrant")
	sqlDropTypeGrants    = queries.Get("DropTypeGrants")
	sqlEntityGranted     = queries.Get("EntityGranted")
	sqlTypeGranted       = queries.Get("TypeGranted")
	sqlGrantsOf          = queries.Get("GrantsOf")
	sqlTypesGrantedTo    = queries.Get("TypesGrantedTo")
	sqlInsertStreamGrant = queries.Get("InsertStreamGrant")
	sqlListStreamGrants  = queries.Get("ListStreamGrants")
	sqlDeleteStreamGrant = queries.Get("DeleteStreamGrant")
	sqlStreamGranted     = queries.Get("StreamGranted")
	sqlCountGrantsBy     = queries.Get("CountGrantsBy")
	sqlNoteUser          = queries.Get("NoteUser")
	sqlSharedStateLinks  = queries.Get("SharedStateLinks")
	sqlLinkSharedState   = queries.Get("LinkSharedState")
)
