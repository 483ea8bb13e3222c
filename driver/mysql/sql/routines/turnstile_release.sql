-- {p}turnstile_release releases the session's fast holder of one name as
-- fast_release_name does and then, when that was all there was to
-- release, lets the turnstile go: one round trip on the hand-off's path.
DROP PROCEDURE IF EXISTS {p}turnstile_release;
-- statement
CREATE PROCEDURE {p}turnstile_release(IN p_t VARCHAR(64) CHARACTER SET ascii,
    IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256))
MODIFIES SQL DATA
BEGIN
    -- fast_release_name's rows changed and signal (its insert id, from
    -- 0), and RELEASE_LOCK's answer when it ran (NULL when it did not:
    -- the slow path has more to release, or nothing was released).
    DECLARE v_n INT;
    DECLARE v_signal BIGINT;
    DECLARE v_unlocked INT DEFAULT NULL;
    DO LAST_INSERT_ID(0);
    UPDATE {p}lock_fast
       SET h_session = IF(slow = 0, NULL, IF(LAST_INSERT_ID(IF(h_id IS NOT NULL, 3, IF(LAST_INSERT_ID() = 3, 3, 1))) > 0, h_session, h_session)),
           h_id = IF(slow = 0, NULL, h_id), h_client = IF(slow = 0, NULL, h_client),
           h_mode = IF(slow = 0, NULL, h_mode), h_call = IF(slow = 0, NULL, h_call), h_at = IF(slow = 0, NULL, h_at)
     WHERE h_session = p_sess AND kind = p_kind AND ns = p_ns AND name = p_name;
    SET v_n = ROW_COUNT();
    SET v_signal = LAST_INSERT_ID();
    IF v_signal = 0 AND v_n > 0 THEN
        SET v_unlocked = RELEASE_LOCK(p_t);
    END IF;
    SELECT v_n, v_signal, v_unlocked;
END;
-- end
