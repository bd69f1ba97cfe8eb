-- Owned by authz: Electric's permission grants. An entity grant gives a principal, or
-- every principal of a kind, one permission on an entity (and, with propagation
-- 'descendants', on its descendants); copy_to_children grants are copied to each child
-- at spawn. A type grant gives spawn or manage on an entity type. Expired grants are
-- ignored by every check (and kept, so that listing shows why access ended).
CREATE TABLE entity_grants (
    id               text        PRIMARY KEY,
    entity_url       text        NOT NULL,
    subject_kind     text        NOT NULL CHECK (subject_kind IN ('principal', 'principal_kind')),
    subject_value    text        NOT NULL,
    permission       text        NOT NULL
        CHECK (permission IN ('read', 'write', 'delete', 'signal', 'fork', 'schedule', 'spawn', 'manage')),
    propagation      text        NOT NULL DEFAULT 'self' CHECK (propagation IN ('self', 'descendants')),
    copy_to_children boolean     NOT NULL DEFAULT false,
    expires_at       timestamptz,
    created_by       text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX entity_grants_entity ON entity_grants (entity_url);
CREATE INDEX entity_grants_subject ON entity_grants (subject_value, permission);

CREATE TABLE type_grants (
    id            text        PRIMARY KEY,
    type_name     text        NOT NULL,
    subject_kind  text        NOT NULL CHECK (subject_kind IN ('principal', 'principal_kind')),
    subject_value text        NOT NULL,
    permission    text        NOT NULL CHECK (permission IN ('spawn', 'manage')),
    expires_at    timestamptz,
    created_by    text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX type_grants_type ON type_grants (type_name);
