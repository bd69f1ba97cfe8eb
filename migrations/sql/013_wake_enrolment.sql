-- Owned by wake: every entity gets its delivery row (entity_wake) in the transaction that
-- spawns it. A trigger rather than an INSERT in the entity package, so that only wake's
-- SQL names entity_wake and no spawn can forget it.
CREATE FUNCTION wake_enrol_entity() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO entity_wake (entity_url, stream_id, entity_type) VALUES (NEW.url, NEW.stream_id, NEW.type);
    RETURN NULL;
END
$$;

CREATE TRIGGER entities_wake_enrolment AFTER INSERT ON entities
    FOR EACH ROW EXECUTE FUNCTION wake_enrol_entity();
