-- Attachments of entities (package attachment): files uploaded to an entity
-- (POST /_electric/entities/:type/:id/attachments). The bytes live in a closed binary
-- stream <entity url>/attachments/<id>, under the entity's access decision; this row is
-- what reading them back needs without replaying the entity's main stream (its content
-- type, name, size and digest), and what the per-principal quotas count (created_by).
-- The manifest entry the runtime and UI read is in the entity's main stream as well.
CREATE TABLE attachments (
    entity_url  text NOT NULL,
    id          text NOT NULL,
    stream_path text NOT NULL,
    mime_type   text NOT NULL,
    filename    text,
    byte_length bigint NOT NULL,
    sha256      text NOT NULL,
    -- the manifest entry as written to the main stream (json: kept byte for byte)
    entry       json NOT NULL,
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_url, id)
);
CREATE INDEX attachments_created_by ON attachments (created_by);
