-- name: AssignXid :one
-- Whether this session may write (a standby is in recovery and read-only), and, on a
-- primary, a transaction ID for the transaction, so that its commit writes a commit
-- record and waits for it to be flushed (and, with synchronous replication, for the
-- standby's acknowledgement).
SELECT (pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on')::bool AS read_only,
       (CASE WHEN pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'
            THEN 0 ELSE txid_current() END)::int8 AS xid;
