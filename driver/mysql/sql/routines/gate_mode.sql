-- Gated identifiers in one call. A transaction that
-- holds a lock (Client.LockTx) holds the identifier's
-- gate, the row lock of its {p}lock_gates row, and the identifier is
-- gated. The slow path's procedures left every gated identifier to the
-- engine's transaction of several statements (a request answered 'F', a
-- withdrawal -1, a release reported it for the engine to hand on, and
-- MariaDB's LockRegrant had no call at all), because the gate is tested
-- by NOWAIT locking reads, which MariaDB does not allow in a stored
-- procedure's own statements. They are allowed in a statement the
-- procedure prepares, so the procedures now test the gate themselves
-- ({p}gate_mode) and count a held gate as a granted instance of nobody's
-- session, as the engine's gateRows does: every change the slow path
-- makes to the lock state, gated or not, is one procedure call (the
-- step before the lock state leaves InnoDB: a MEMORY table's writes
-- cannot be rolled back, so they must not be spread over a client's
-- round trips).
--
-- {p}gate_mode sets p_mode to the mode in which other transactions hold
-- the identifier's gate ('W' or 'R'; NULL when none does, or there is no
-- gate row), as TxGateHeld (txlocks.go) finds it: an exclusive NOWAIT
-- locking read of the gate row, and a shared one when that is refused;
-- the locks it takes stay until the caller's transaction ends (a
-- transaction that takes the gate after sees what the caller granted).
-- A refused NOWAIT read fails its statement alone (error 1205 on
-- MariaDB, 3572 on MySQL), not the caller's transaction. MariaDB spells
-- the shared read LOCK IN SHARE MODE NOWAIT, MySQL FOR SHARE NOWAIT.
DROP PROCEDURE IF EXISTS {p}gate_mode;
-- statement
CREATE PROCEDURE {p}gate_mode(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256),
    OUT p_mode CHAR(1) CHARACTER SET ascii)
MODIFIES SQL DATA
BEGIN
    DECLARE v_busy TINYINT DEFAULT 0;
    DECLARE CONTINUE HANDLER FOR 1205, 3572 SET v_busy = 1;
    DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
    SET p_mode = NULL, @baton_gate_kind = p_kind, @baton_gate_ns = p_ns, @baton_gate_name = p_name;
    PREPARE baton_gate_w FROM 'SELECT 1 INTO @baton_gate_one FROM {p}lock_gates WHERE kind = ? AND ns = ? AND name = ? FOR UPDATE NOWAIT';
    EXECUTE baton_gate_w USING @baton_gate_kind, @baton_gate_ns, @baton_gate_name;
    DEALLOCATE PREPARE baton_gate_w;
    IF v_busy = 1 THEN
        SET v_busy = 0;
        IF VERSION() LIKE '%MariaDB%' THEN
            PREPARE baton_gate_r FROM 'SELECT 1 INTO @baton_gate_one FROM {p}lock_gates WHERE kind = ? AND ns = ? AND name = ? LOCK IN SHARE MODE NOWAIT';
        ELSE
            PREPARE baton_gate_r FROM 'SELECT 1 INTO @baton_gate_one FROM {p}lock_gates WHERE kind = ? AND ns = ? AND name = ? FOR SHARE NOWAIT';
        END IF;
        EXECUTE baton_gate_r USING @baton_gate_kind, @baton_gate_ns, @baton_gate_name;
        DEALLOCATE PREPARE baton_gate_r;
        SET p_mode = IF(v_busy = 1, 'W', 'R');
    END IF;
    SET @baton_gate_ns = NULL, @baton_gate_name = NULL;
END;
-- end
