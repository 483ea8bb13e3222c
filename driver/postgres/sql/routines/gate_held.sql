-- {p}gate_held is the mode a transaction holds the gate in ('W', 'R'), or
-- NULL when none does. Its probe stays held until the caller's
-- transaction ends (see above).
-- statement
CREATE OR REPLACE FUNCTION {p}gate_held(k smallint, n bytea, m bytea) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    key bigint := {p}gate_key(k, n, m);
BEGIN
    IF NOT pg_try_advisory_xact_lock_shared(key) THEN
        RETURN 'W';
    END IF;
    IF NOT pg_try_advisory_xact_lock(key) THEN
        RETURN 'R';
    END IF;
    RETURN NULL;
END
$$;
-- end
