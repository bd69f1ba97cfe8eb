-- Retention: idempotency keys are kept for the dedupe window, finished delayed sends and
-- old wake failures for the history retention; a janitor in every server process purges
-- what is older in small batches. BRIN indexes find the old rows for next to nothing:
-- these tables are written in time order, and a BRIN index costs the insert path (every
-- keyed send writes a stream_dedupe row) almost nothing, unlike a B-tree.
CREATE INDEX stream_dedupe_created_brin ON stream_dedupe USING brin (created_at);
CREATE INDEX wake_failures_failed_brin ON wake_failures USING brin (failed_at);
CREATE INDEX delayed_sends_completed_idx ON delayed_sends (completed_at) WHERE completed_at IS NOT NULL;
