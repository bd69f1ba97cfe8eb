-- Each table has one owning package; only it writes the table or names it in SQL. An
-- owner publishes a read-only view of what other packages may join with, so that their
-- queries stay in the database (one statement, planned as one) without depending on the
-- table's other columns:
--   stream_heads    (streamdb) where each stream's tail is, and whether it is still live;
--   entity_statuses (entity)   each entity's type, lifecycle status and main stream.
-- Both are plain single-table views: the planner inlines them, so they cost nothing.
CREATE VIEW stream_heads AS
    SELECT id, path, tail_seq, tail_pos, closed, soft_deleted, created_at FROM streams;

CREATE VIEW entity_statuses AS
    SELECT url, type, status, stream_id FROM entities;
