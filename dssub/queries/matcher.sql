-- Queries of matcher.go.

-- name: MatcherVersion
SELECT version FROM ds_state

-- name: SelectPatterns
SELECT id, coalesce(pattern, ''), coalesce(wake_stream, '') FROM ds_subscriptions

-- name: SelectExplicitLinks
SELECT subscription_id, path FROM ds_subscription_streams WHERE explicit
