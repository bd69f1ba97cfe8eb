package dssub

import (
	"embed"

	"github.com/entityd/entityd/internal/sqlfile"
)

// queryFiles are this package's SQL: it owns the tables they name (migrations.Owners),
// and no other package names them.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlfile.MustLoad("dssub", queryFiles)

// One variable per query, so a name that is not in the files stops the package at init.
var (
	// ops.go
	sqlInsertSubscription    = queries.Get("InsertSubscription")
	sqlCountSubscriptionsBy  = queries.Get("CountSubscriptionsBy")
	sqlStreamsUnderPattern   = queries.Get("StreamsUnderPattern")
	sqlLinkGlobMatches       = queries.Get("LinkGlobMatches")
	sqlDeleteSubscription    = queries.Get("DeleteSubscription")
	sqlUnmarkExplicit        = queries.Get("UnmarkExplicit")
	sqlDeleteUnlinkedStreams = queries.Get("DeleteUnlinkedStreams")

	// keys.go
	sqlLockKeys         = queries.Get("LockKeys")
	sqlSelectKeys       = queries.Get("SelectKeys")
	sqlInsertSigningKey = queries.Get("InsertSigningKey")
	sqlInsertHMACKey    = queries.Get("InsertHMACKey")

	// matcher.go
	sqlMatcherVersion      = queries.Get("MatcherVersion")
	sqlSelectPatterns      = queries.Get("SelectPatterns")
	sqlSelectExplicitLinks = queries.Get("SelectExplicitLinks")

	// reconcile.go
	sqlTryReconcileLock            = queries.Get("TryReconcileLock")
	sqlSubscriptionsWithStaleLinks = queries.Get("SubscriptionsWithStaleLinks")
	sqlDeleteStaleGlobLinks        = queries.Get("DeleteStaleGlobLinks")
	sqlScannedUpTo                 = queries.Get("ScannedUpTo")
	sqlLinkNewStreams              = queries.Get("LinkNewStreams")
	sqlAdvanceScan                 = queries.Get("AdvanceScan")

	// service.go
	sqlLinkMatchedStreams = queries.Get("LinkMatchedStreams")
	sqlDueSubscriptions   = queries.Get("DueSubscriptions")

	// store.go
	sqlUpdateWakeState       = queries.Get("UpdateWakeState")
	sqlRebaseLinks           = queries.Get("RebaseLinks")
	sqlSelectLinks           = queries.Get("SelectLinks")
	sqlTakeWakeSnapshot      = queries.Get("TakeWakeSnapshot")
	sqlAckSnapshot           = queries.Get("AckSnapshot")
	sqlUpdateAcked           = queries.Get("UpdateAcked")
	sqlBumpVersion           = queries.Get("BumpVersion")
	sqlLinkExplicit          = queries.Get("LinkExplicit")
	sqlLinkExplicitFromStart = queries.Get("LinkExplicitFromStart")
	sqlLockSubs              = queries.Get("LockSubs")
	sqlSelectLinksOf         = queries.Get("SelectLinksOf")

	// wake.go
	sqlAbandonAttempt   = queries.Get("AbandonAttempt")
	sqlAcceptDeliveries = queries.Get("AcceptDeliveries")
	sqlNewStreamsSince  = queries.Get("NewStreamsSince")
	sqlLockSub          = queries.Get("LockSub")
	sqlSelectSub        = queries.Get("SelectSub")
	sqlSelectSubs       = queries.Get("SelectSubs")

	// claims.go
	sqlLockSubByWake    = queries.Get("LockSubByWake")
	sqlClaimWriteTokens = queries.Get("ClaimWriteTokens")
	sqlSelectSubByWake  = queries.Get("SelectSubByWake")
	sqlWriteTokensHold  = queries.Get("WriteTokensHold")
)
