-- Held messages and timer payloads are user content: kept byte for byte as json, not
-- jsonb. jsonb refuses \u0000 and lone surrogates ("\ud800"), which the HTTP door
-- accepts in content and streams store as sent; a held message it refused wedged its
-- entity (every delivery attempt failed on the INSERT).
ALTER TABLE inbox_held ALTER COLUMN value TYPE json USING value::json;
ALTER TABLE wake_timers ALTER COLUMN payload TYPE json USING payload::json;
