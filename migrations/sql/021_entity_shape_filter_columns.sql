-- Electric shapes of entities filter by type and status (the list filters) and by url
-- (one entity): the snapshot query pushes those conditions down, so the rows view shows
-- the columns as they are stored, and an index serves them instead of a scan of every
-- entity. The value the shape renders is unchanged.
CREATE OR REPLACE VIEW entity_shape_rows AS
  SELECT url AS key, shape_entity_value(e) AS value, e.type AS type, e.status AS status FROM entities e;
