-- Owned by streamdb: plain streams live at the root of the URL space (/<path>), and
-- /v1/stream/<path> became another name of the same stream. Streams created under the
-- old prefix move to the root. A stream whose root name is already taken (only an entity
-- stream could be) keeps its old path, which no route reaches any more; none existed
-- when this was written.
UPDATE streams s SET path = substr(s.path, length('/v1/stream') + 1)
    WHERE starts_with(s.path, '/v1/stream/')
      AND NOT EXISTS (SELECT 1 FROM streams t WHERE t.path = substr(s.path, length('/v1/stream') + 1));
