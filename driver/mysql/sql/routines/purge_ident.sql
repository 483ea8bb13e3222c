-- {p}purge_ident deletes one idle identifier (ident_purge_idle, in the
-- caller's transaction): under its mutex (skipped when another holds
-- it), its counters' row when nothing holds, waits for or gates it, the
-- fast path owns it and its fence is a second behind the clock; then the
-- mutex row, when no counters' row is left (a restart leaves mutex rows
-- without one). One row: 1 when the mutex row went, 0 otherwise.
DROP PROCEDURE IF EXISTS {p}purge_ident;
-- statement
CREATE PROCEDURE {p}purge_ident(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256))
MODIFIES SQL DATA
BEGIN
    DECLARE v_one INT DEFAULT NULL;
    DECLARE v_n INT DEFAULT 0;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_one = NULL;
    SELECT 1 INTO v_one FROM {p}lock_mutex
     WHERE kind = p_kind AND ns = p_ns AND name = p_name AND gated = 0 FOR UPDATE SKIP LOCKED;
    IF v_one IS NOT NULL THEN
        DELETE FROM {p}lock_idents
         WHERE kind = p_kind AND ns = p_ns AND name = p_name AND n_r = 0 AND n_w = 0 AND n_p = 0
           AND fence < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 1000000
           AND NOT EXISTS (SELECT 1 FROM {p}lock_requests r WHERE r.kind = p_kind AND r.ns = p_ns AND r.name = p_name)
           AND NOT EXISTS (SELECT 1 FROM {p}lock_fast f WHERE f.kind = p_kind AND f.ns = p_ns AND f.name = p_name AND f.slow = 1);
        IF NOT EXISTS (SELECT 1 FROM {p}lock_idents WHERE kind = p_kind AND ns = p_ns AND name = p_name) THEN
            DELETE FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = p_name;
            SET v_n = ROW_COUNT();
        END IF;
    END IF;
    SELECT v_n;
END;
-- end
