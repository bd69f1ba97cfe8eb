package membership

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns entity_observations and
// observation_members.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("membership", queryFiles)

var (
	sqlUpsertObservation   = queries.Get("UpsertObservation")
	sqlLockObservation     = queries.Get("LockObservation")
	sqlListObservations    = queries.Get("ListObservations")
	sqlObservationsOf      = queries.Get("ObservationsOf")
	sqlMembersOf           = queries.Get("MembersOf")
	sqlMemberOf            = queries.Get("MemberOf")
	sqlUpsertMember        = queries.Get("UpsertMember")
	sqlDeleteMember        = queries.Get("DeleteMember")
	sqlCountObservationsOf = queries.Get("CountObservationsOf")
	sqlObservationTags     = queries.Get("ObservationTags")
	sqlFormerObservations  = queries.Get("FormerObservations")
)
