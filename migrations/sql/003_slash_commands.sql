-- The effective slash commands of every entity, one row per (entity, command name),
-- kept in the same transaction as the slash_command events of the entity's stream.
-- static_def is the type's static definition for the name (null when none);
-- dynamic_layers is the stack of per-owner registrations, bottom first. The other
-- columns are the effective command that the stream's collection shows.
CREATE TABLE slash_commands (
    entity_url     text        NOT NULL,
    name           text        NOT NULL,
    description    text,
    arguments      jsonb,
    source         text        NOT NULL CHECK (source IN ('static', 'dynamic')),
    owner          text,
    version        text,
    updated_at     timestamptz NOT NULL,
    static_def     jsonb,
    dynamic_layers jsonb       NOT NULL DEFAULT '[]',
    PRIMARY KEY (entity_url, name)
);
