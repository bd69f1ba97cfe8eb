-- GET /_electric/entities?created_by=<principal> pages in (created_at, url) order among one
-- principal's entities: an index in that order makes each page a range scan of that
-- principal's rows, however many entities others have. (A plain CREATE INDEX: migrations
-- run in a transaction; see 020.)
CREATE INDEX entities_created_by_idx ON entities (created_by, created_at, url) WHERE created_by IS NOT NULL;
