-- The entity list pages in (created_at, url) order (GET /_electric/entities?limit=&after=):
-- an index in that order makes each page a range scan, however many entities there are.
-- (A plain CREATE INDEX: migrations run in a transaction. On a large table it holds a
-- write lock on entities while it builds, about a second per million rows.)
CREATE INDEX entities_list_order_idx ON entities (created_at, url);
