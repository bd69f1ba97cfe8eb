-- name: FirstUnackedListed
-- The stream a wake that ended without a word was about: the first (by path, as the wake
-- chose its primary stream) of those it listed whose listed work is not acknowledged.
SELECT path FROM ds_subscription_streams
  WHERE subscription_id = $1 AND wake_seq IS NOT NULL AND (acked_seq, acked_pos) < (wake_seq, wake_pos)
  ORDER BY path LIMIT 1

-- name: NoteWakeFailure
-- A wake failed its stream $2 (relative): one more failure, unless the wake's listed work
-- of the stream is acknowledged after all (no row).
UPDATE ds_subscription_streams SET failures = failures + 1
  WHERE subscription_id = $1 AND path = $2 AND wake_seq IS NOT NULL
    AND (acked_seq, acked_pos) < (wake_seq, wake_pos)
  RETURNING failures, acked_seq, acked_pos, wake_seq, wake_pos

-- name: SetAsideListed
-- The give-up rule's end for stream $2: what the wake listed of it is acknowledged.
UPDATE ds_subscription_streams SET acked_seq = wake_seq, acked_pos = wake_pos, failures = 0
  WHERE subscription_id = $1 AND path = $2 AND wake_seq IS NOT NULL
