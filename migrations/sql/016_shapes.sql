-- Electric shapes of the registry (package shapes, GET /_electric/electric/v1/shape).
--
-- Owned by entity, published: the rows as a shape shows them, in Electric's text
-- encoding (every value a string or null; the client parses them by the column types the
-- server announces). The write token and the schema snapshots are not part of a shape.
CREATE FUNCTION shape_entity_value(e entities) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'url', e.url, 'type', e.type, 'status', e.status, 'tags', e.tags::text,
        'spawn_args', e.spawn_args::text, 'parent', e.parent, 'created_by', e.created_by,
        'type_revision', e.type_revision::text,
        'created_at', (extract(epoch FROM e.created_at) * 1000)::bigint::text,
        'updated_at', (extract(epoch FROM e.updated_at) * 1000)::bigint::text)
$$;

CREATE FUNCTION shape_entity_type_value(t entity_types) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'name', t.name, 'description', t.description,
        'creation_schema', t.creation_schema::text, 'inbox_schemas', t.inbox_schemas::text,
        'state_schemas', t.state_schemas::text, 'slash_commands', t.slash_commands::text,
        'serve_endpoint', t.serve_endpoint,
        'default_dispatch_policy', t.default_dispatch_policy::text,
        'revision', t.revision::text,
        'created_at', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'updated_at', to_char(t.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;

CREATE VIEW entity_shape_rows AS SELECT url AS key, shape_entity_value(e) AS value FROM entities e;
CREATE VIEW entity_type_shape_rows AS SELECT name AS key, shape_entity_type_value(t) AS value FROM entity_types t;

-- Owned by shapes: every change to those rows, in commit-safe order. A reader takes only
-- the changes of transactions older than the oldest one still running (txid below the
-- snapshot's xmin), ordered by (txid, id): nothing can commit behind that point later, so
-- an offset never skips a change.
CREATE TABLE shape_log (
    id        bigserial   PRIMARY KEY,
    txid      xid8        NOT NULL DEFAULT pg_current_xact_id(),
    relation  text        NOT NULL,
    key       text        NOT NULL,
    operation text        NOT NULL CHECK (operation IN ('insert', 'update', 'delete')),
    value     jsonb       NOT NULL,
    at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shape_log_position ON shape_log (txid, id);
CREATE INDEX shape_log_at ON shape_log (at);

-- What retention removed: a client whose offset is older must start again (409).
CREATE TABLE shape_state (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    epoch        text    NOT NULL DEFAULT md5(random()::text || clock_timestamp()::text),
    trimmed_txid xid8    NOT NULL DEFAULT '0'
);
INSERT INTO shape_state DEFAULT VALUES;

-- One IF per table: PL/pgSQL plans a statement for the row type it meets, so a
-- statement may only name the fields of the table it runs for.
CREATE FUNCTION shape_log_capture() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k  text;
    v  jsonb;
    ov jsonb;
BEGIN
    IF TG_TABLE_NAME = 'entities' THEN
        IF TG_OP = 'DELETE' THEN
            k := OLD.url;
            v := jsonb_build_object('url', OLD.url);
        ELSE
            k := NEW.url;
            v := shape_entity_value(NEW);
            IF TG_OP = 'UPDATE' THEN
                ov := shape_entity_value(OLD);
            END IF;
        END IF;
    ELSE
        IF TG_OP = 'DELETE' THEN
            k := OLD.name;
            v := jsonb_build_object('name', OLD.name);
        ELSE
            k := NEW.name;
            v := shape_entity_type_value(NEW);
            IF TG_OP = 'UPDATE' THEN
                ov := shape_entity_type_value(OLD);
            END IF;
        END IF;
    END IF;
    IF ov IS NOT NULL AND ov = v THEN
        RETURN NULL; -- nothing a shape shows changed (commands_revision, say)
    END IF;
    INSERT INTO shape_log (relation, key, operation, value) VALUES (TG_TABLE_NAME, k, lower(TG_OP), v);
    RETURN NULL;
END
$$;

CREATE TRIGGER entities_shape_log AFTER INSERT OR UPDATE OR DELETE ON entities
    FOR EACH ROW EXECUTE FUNCTION shape_log_capture();
CREATE TRIGGER entity_types_shape_log AFTER INSERT OR UPDATE OR DELETE ON entity_types
    FOR EACH ROW EXECUTE FUNCTION shape_log_capture();
