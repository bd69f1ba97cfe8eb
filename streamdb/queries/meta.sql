-- The columns scanMeta reads (meta.go), in its order.

-- fragment: meta
-- A Meta from "streams s" joined with its fork source "src".
s.id, s.path, s.content_type, s.tail_seq, s.tail_pos, s.closed,
    s.closed_producer_id, s.closed_producer_epoch, s.closed_producer_seq, s.last_stream_seq,
    s.ttl_seconds, s.expires_at, s.last_access_at, s.created_at, s.refcount, s.soft_deleted,
    coalesce(s.fork_source_id, 0), coalesce(src.path, ''), s.fork_seq, s.fork_pos, s.fork_offset, s.fork_sub_offset,
    s.access_kind, coalesce(s.owner_principal, ''), coalesce(s.entity_url, '')
  FROM streams s LEFT JOIN streams src ON src.id = s.fork_source_id
