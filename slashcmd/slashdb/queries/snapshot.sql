-- Queries of snapshot.go.

-- name: CollectionTail
SELECT tail_seq, tail_pos FROM stream_heads WHERE path = $1
