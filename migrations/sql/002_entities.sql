-- Entity types and entities (the Electric Agents registry). Schemas are stored as json,
-- not jsonb, so they come back exactly as the user registered them.
CREATE TABLE entity_types (
    name                            text        PRIMARY KEY,
    description                     text        NOT NULL,
    creation_schema                 json,
    inbox_schemas                   json,
    state_schemas                   json,
    slash_commands                  json,
    serve_endpoint                  text,
    default_dispatch_policy         json,
    externally_writable_collections json,
    revision                        integer     NOT NULL DEFAULT 1,
    created_at                      timestamptz NOT NULL DEFAULT now(),
    updated_at                      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE entities (
    url           text        PRIMARY KEY,
    type          text        NOT NULL,
    instance_id   text        NOT NULL,
    status        text        NOT NULL
        CHECK (status IN ('spawning', 'running', 'idle', 'paused', 'stopping', 'stopped', 'killed')),
    stream_id     bigint      NOT NULL UNIQUE REFERENCES streams (id),
    write_token   text        NOT NULL,
    tags          jsonb       NOT NULL DEFAULT '{}',
    spawn_args    json,
    parent        text,
    created_by    text,
    -- the type's revision and message schemas when the entity was spawned; sends use the
    -- current type's schemas overlaid on this snapshot, so a deleted type keeps working
    type_revision integer     NOT NULL,
    inbox_schemas json,
    state_schemas json,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX entities_type_idx ON entities (type);
CREATE INDEX entities_parent_idx ON entities (parent) WHERE parent IS NOT NULL;
CREATE INDEX entities_status_idx ON entities (status);
