-- The type revision whose static slash commands an entity's rows reflect. Registering a
-- type reconciles the commands of its live entities and moves this forward, so a server
-- that stopped half-way finishes the job at its next start.
ALTER TABLE entities ADD COLUMN commands_revision integer NOT NULL DEFAULT 0;
UPDATE entities SET commands_revision = type_revision;
