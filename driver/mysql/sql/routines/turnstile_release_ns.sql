-- {p}turnstile_release_ns releases the session's fast holders of a
-- namespace as fast_release_ns does and then, when that was all there was
-- to release, lets the one turnstile the session holds there go (a
-- session holding several turnstiles in the namespace lets them go one by
-- one after the release).
DROP PROCEDURE IF EXISTS {p}turnstile_release_ns;
-- statement
CREATE PROCEDURE {p}turnstile_release_ns(IN p_t VARCHAR(64) CHARACTER SET ascii,
    IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_kind INT, IN p_ns VARBINARY(256))
MODIFIES SQL DATA
BEGIN
    -- As {p}turnstile_release (migration 031): fast_release_ns's rows
    -- changed and signal, and RELEASE_LOCK's answer when it ran.
    DECLARE v_n INT;
    DECLARE v_signal BIGINT;
    DECLARE v_unlocked INT DEFAULT NULL;
    DO LAST_INSERT_ID(0);
    UPDATE {p}lock_fast FORCE INDEX (lock_fast_session)
       SET h_session = IF(slow = 0, NULL, IF(LAST_INSERT_ID(IF(h_id IS NOT NULL, 3, IF(LAST_INSERT_ID() = 3, 3, 1))) > 0, h_session, h_session)),
           h_id = IF(slow = 0, NULL, h_id), h_client = IF(slow = 0, NULL, h_client),
           h_mode = IF(slow = 0, NULL, h_mode), h_call = IF(slow = 0, NULL, h_call), h_at = IF(slow = 0, NULL, h_at)
     WHERE h_session = p_sess AND kind = p_kind AND ns = p_ns;
    SET v_n = ROW_COUNT();
    SET v_signal = LAST_INSERT_ID();
    IF v_signal = 0 AND v_n > 0 THEN
        SET v_unlocked = RELEASE_LOCK(p_t);
    END IF;
    SELECT v_n, v_signal, v_unlocked;
END;
-- end
