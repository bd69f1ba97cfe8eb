-- The shapes Electric's web UI reads (package shapes): every entities column it asks
-- for, and the runners, runner_runtime_diagnostics, users and entity_effective_permissions
-- tables. Values are in Electric's text encoding, as in migration 016.

-- Owned by entity: the dispatch policy an entity was spawned under (its type's
-- default_dispatch_policy then), as the reference keeps it per entity; spawn args are {}
-- when the spawn gave none, as the reference stores them.
ALTER TABLE entities ADD COLUMN dispatch_policy json;
ALTER TABLE entities ALTER COLUMN spawn_args SET DEFAULT '{}';

-- Timestamps as Electric's sync service writes a timestamptz (UTC).
CREATE FUNCTION shape_timestamptz(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00'
$$;

-- entityd has no sandboxes: sandbox is always null. Rows spawned before this migration
-- without args show {} like the new ones.
CREATE OR REPLACE FUNCTION shape_entity_value(e entities) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'url', e.url, 'type', e.type, 'status', e.status, 'tags', e.tags::text,
        'spawn_args', coalesce(e.spawn_args::text, '{}'), 'sandbox', NULL::text,
        'dispatch_policy', e.dispatch_policy::text,
        'parent', e.parent, 'created_by', e.created_by,
        'type_revision', e.type_revision::text,
        'inbox_schemas', e.inbox_schemas::text, 'state_schemas', e.state_schemas::text,
        'created_at', (extract(epoch FROM e.created_at) * 1000)::bigint::text,
        'updated_at', (extract(epoch FROM e.updated_at) * 1000)::bigint::text)
$$;

-- Owned by remote, published: a runner as the runners shape shows it, and its runtime
-- diagnostics (a row only once the runner has sent a heartbeat, as the reference's
-- runner_runtime_diagnostics table fills on the first one).
CREATE FUNCTION shape_runner_value(r runners) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', r.id, 'owner_principal', r.owner_principal, 'label', r.label, 'kind', r.kind,
        'admin_status', r.admin_status, 'wake_stream', r.wake_stream,
        'sandbox_profiles', r.sandbox_profiles::text,
        'created_at', shape_timestamptz(r.created_at), 'updated_at', shape_timestamptz(r.updated_at))
$$;

CREATE FUNCTION shape_runner_diagnostics_value(r runners) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN r.last_heartbeat_at IS NOT NULL THEN jsonb_build_object(
        'runner_id', r.id, 'owner_principal', r.owner_principal,
        'wake_stream_offset', r.wake_stream_offset,
        'last_seen_at', shape_timestamptz(r.last_heartbeat_at),
        'liveness_lease_expires_at', shape_timestamptz(coalesce(r.lease_until, r.last_heartbeat_at)),
        'diagnostics', r.diagnostics::text,
        'updated_at', shape_timestamptz(r.last_heartbeat_at)) END
$$;

CREATE VIEW runner_shape_rows AS
    SELECT id AS key, shape_runner_value(r) AS value FROM runners r;
CREATE VIEW runner_diagnostics_shape_rows AS
    SELECT id AS key, shape_runner_diagnostics_value(r) AS value FROM runners r
    WHERE last_heartbeat_at IS NOT NULL;

-- Owned by authz: the user principals the server has seen (the reference's users
-- table, which it fills when a user principal first calls). entityd learns no profile,
-- so display_name, email and avatar_url stay null until something sets them.
CREATE TABLE users (
    id           text        PRIMARY KEY,
    display_name text,
    email        text,
    avatar_url   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION shape_user_value(u users) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', u.id, 'display_name', u.display_name, 'email', u.email, 'avatar_url', u.avatar_url,
        'created_at', shape_timestamptz(u.created_at), 'updated_at', shape_timestamptz(u.updated_at))
$$;
CREATE VIEW user_shape_rows AS SELECT id AS key, shape_user_value(u) AS value FROM users u;

-- Owned by authz, published: entity grants as the reference's entity_effective_permissions
-- rows, whose ids are numbers (the UI parses them as numbers): seq numbers the grants.
-- A grant shows on the entity it names (entityd checks descendants propagation when it
-- decides, and does not copy a grant onto every descendant).
ALTER TABLE entity_grants ADD COLUMN seq bigserial;

CREATE FUNCTION shape_entity_permission_value(g entity_grants) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', g.seq::text, 'entity_url', g.entity_url, 'source_entity_url', g.entity_url,
        'source_grant_id', g.seq::text, 'permission', g.permission,
        'subject_kind', g.subject_kind, 'subject_value', g.subject_value,
        'expires_at', shape_timestamptz(g.expires_at), 'created_at', shape_timestamptz(g.created_at))
$$;
CREATE VIEW entity_permission_shape_rows AS
    SELECT seq::text AS key, shape_entity_permission_value(g) AS value FROM entity_grants g;

-- Owned by shapes: one change of a shape's row, from the row's values before and after
-- (null when it is not in the shape). A delete keeps the row's last value: the key is all
-- a shape shows of it, and the rest tells the server whom to show the delete to.
CREATE FUNCTION shape_log_row(rel text, k text, ov jsonb, nv jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF (ov IS NULL AND nv IS NULL) OR ov = nv THEN
        RETURN;
    END IF;
    INSERT INTO shape_log (relation, key, operation, value) VALUES (rel, k,
        CASE WHEN ov IS NULL THEN 'insert' WHEN nv IS NULL THEN 'delete' ELSE 'update' END,
        coalesce(nv, ov));
END
$$;

CREATE FUNCTION shape_log_runners() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k text := CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END;
BEGIN
    PERFORM shape_log_row('runners', k,
        CASE WHEN TG_OP <> 'INSERT' THEN shape_runner_value(OLD) END,
        CASE WHEN TG_OP <> 'DELETE' THEN shape_runner_value(NEW) END);
    PERFORM shape_log_row('runner_runtime_diagnostics', k,
        CASE WHEN TG_OP <> 'INSERT' THEN shape_runner_diagnostics_value(OLD) END,
        CASE WHEN TG_OP <> 'DELETE' THEN shape_runner_diagnostics_value(NEW) END);
    RETURN NULL;
END
$$;

CREATE FUNCTION shape_log_users() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM shape_log_row('users', CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END,
        CASE WHEN TG_OP <> 'INSERT' THEN shape_user_value(OLD) END,
        CASE WHEN TG_OP <> 'DELETE' THEN shape_user_value(NEW) END);
    RETURN NULL;
END
$$;

CREATE FUNCTION shape_log_entity_grants() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM shape_log_row('entity_effective_permissions',
        CASE WHEN TG_OP = 'DELETE' THEN OLD.seq ELSE NEW.seq END::text,
        CASE WHEN TG_OP <> 'INSERT' THEN shape_entity_permission_value(OLD) END,
        CASE WHEN TG_OP <> 'DELETE' THEN shape_entity_permission_value(NEW) END);
    RETURN NULL;
END
$$;

CREATE TRIGGER runners_shape_log AFTER INSERT OR UPDATE OR DELETE ON runners
    FOR EACH ROW EXECUTE FUNCTION shape_log_runners();
CREATE TRIGGER users_shape_log AFTER INSERT OR UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION shape_log_users();
CREATE TRIGGER entity_grants_shape_log AFTER INSERT OR UPDATE OR DELETE ON entity_grants
    FOR EACH ROW EXECUTE FUNCTION shape_log_entity_grants();
