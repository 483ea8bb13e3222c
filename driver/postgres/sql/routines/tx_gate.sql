-- {p}tx_gate takes the gate in the caller's transaction, waiting at most
-- wait_ms (0: not at all, negative: without limit), and then, when asked
-- (check_sessions) and in READ COMMITTED (each statement a new snapshot),
-- checks that the identifier
-- is gated and that no session holds it, or waits for it, in a
-- conflicting mode: a fast path that granted before the mark was
-- committed first, and is seen. It says 'ok', 'unchecked' (gate taken,
-- not checked: not asked, or another isolation level), 'ungated' (not marked yet: the
-- client marks it and calls again), 'session' (a session's lock
-- conflicts), 'busy' (not free in time) or 'deadlock' (PostgreSQL found a
-- cycle among transactions); on every failure the block's subtransaction
-- gave the gate back, and no answer aborts the caller's transaction.
-- statement
CREATE OR REPLACE FUNCTION {p}tx_gate(k smallint, n bytea, m bytea, md text, wait_ms integer, check_sessions boolean) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    key     bigint := {p}gate_key(k, n, m);
    old     text := current_setting('lock_timeout');
    checked boolean := check_sessions AND current_setting('transaction_isolation') = 'read committed';
BEGIN
    BEGIN
        IF wait_ms = 0 THEN
            IF NOT ((md = 'W' AND pg_try_advisory_xact_lock(key)) OR (md = 'R' AND pg_try_advisory_xact_lock_shared(key))) THEN
                RETURN 'busy';
            END IF;
        ELSE
            PERFORM set_config('lock_timeout', CASE WHEN wait_ms < 0 THEN '0' ELSE wait_ms::text END, true);
            IF md = 'W' THEN
                PERFORM pg_advisory_xact_lock(key);
            ELSE
                PERFORM pg_advisory_xact_lock_shared(key);
            END IF;
            PERFORM set_config('lock_timeout', old, true);
        END IF;
        IF checked AND NOT coalesce((SELECT li.gated FROM {p}lock_idents li
                                      WHERE li.kind = k AND li.ns = n AND li.name = m), false) THEN
            RAISE EXCEPTION USING ERRCODE = 'BT002', MESSAGE = 'baton: the identifier is not gated';
        END IF;
        IF checked AND EXISTS (SELECT 1 FROM {p}lock_holds h
                                WHERE h.kind = k AND h.ns = n AND h.name = m AND h.status IN ('G', 'P')
                                  AND (h.mode = 'W' OR md = 'W')) THEN
            RAISE EXCEPTION USING ERRCODE = 'BT001', MESSAGE = 'baton: a session holds the lock';
        END IF;
    EXCEPTION
        WHEN lock_not_available THEN
            RETURN 'busy';
        WHEN deadlock_detected THEN
            RETURN 'deadlock';
        WHEN SQLSTATE 'BT001' THEN
            RETURN 'session';
        WHEN SQLSTATE 'BT002' THEN
            RETURN 'ungated';
    END;
    RETURN CASE WHEN checked THEN 'ok' ELSE 'unchecked' END;
END
$$;
-- end
