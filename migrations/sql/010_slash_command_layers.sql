-- Slash-command layers get a row each. dynamic_layers kept every owner's layer of a name
-- in one jsonb value, so each registration rewrote the whole stack: 30 owners with 30 KB
-- names made each write 934 KB. Now an owner's write touches its own layer row (and the
-- effective row); position orders the stack, the highest on top.
CREATE TABLE slash_command_layers (
    entity_url text   NOT NULL,
    name       text   NOT NULL,
    owner      text   NOT NULL,
    position   bigint NOT NULL,
    layer      json   NOT NULL,
    PRIMARY KEY (entity_url, name, owner)
);

INSERT INTO slash_command_layers (entity_url, name, owner, position, layer)
SELECT c.entity_url, c.name, l.value->>'owner', l.ord, l.value::json
FROM slash_commands c
CROSS JOIN LATERAL jsonb_array_elements(c.dynamic_layers) WITH ORDINALITY AS l(value, ord);

ALTER TABLE slash_commands DROP COLUMN dynamic_layers;
