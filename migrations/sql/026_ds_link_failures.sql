-- Failed wakes in a row of a subscription's stream (a webhook that failed, a wake whose
-- lease lapsed, a done that left the stream's listed work unacknowledged), counted by
-- dssub's give-up rule for the streams it applies to and reset by any acknowledgement
-- that moves the stream's cursor. Past the rule's attempts, the listed work is set aside.
ALTER TABLE ds_subscription_streams ADD COLUMN failures integer NOT NULL DEFAULT 0;
