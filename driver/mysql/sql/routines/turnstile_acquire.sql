-- {p}turnstile_acquire takes an identifier's turnstile on the session's
-- line (GET_LOCK: at once when free, else waiting at most p_wait seconds)
-- and then, if it got it, the lock by fast_acquire's rule: one round trip
-- on the hand-off's path.
DROP PROCEDURE IF EXISTS {p}turnstile_acquire;
-- statement
CREATE PROCEDURE {p}turnstile_acquire(IN p_t VARCHAR(64) CHARACTER SET ascii, IN p_wait DOUBLE,
    IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256), IN p_hid BIGINT,
    IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_client VARCHAR(64) CHARACTER SET ascii,
    IN p_mode CHAR(1) CHARACTER SET ascii, IN p_call BIGINT, IN p_inc BIGINT)
MODIFIES SQL DATA
BEGIN
    -- 1: the turnstile was free; 2: taken after a wait; 0: not within the
    -- wait; NULL: GET_LOCK failed. Then the rows fast_acquire changed (0:
    -- refused) and the new fence.
    DECLARE v_got INT;
    DECLARE v_n INT DEFAULT 0;
    SET v_got = IF(GET_LOCK(p_t, 0) = 1, 1, 2 * GET_LOCK(p_t, p_wait));
    IF v_got > 0 THEN
        INSERT INTO {p}lock_fast (kind, ns, name, fence, slow, h_id, h_session, h_client, h_mode, h_call, h_at)
        SELECT p_kind, p_ns, p_name, LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))), 0,
               p_hid, p_sess, p_client, p_mode, p_call, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))
          FROM {p}incarnation WHERE id = p_inc OR p_inc = 0
        ON DUPLICATE KEY UPDATE
            fence     = IF(slow = 0 AND h_id IS NULL, LAST_INSERT_ID(fence + 1), fence),
            h_session = IF(slow = 0 AND h_id IS NULL, VALUES(h_session), h_session),
            h_client  = IF(slow = 0 AND h_id IS NULL, VALUES(h_client), h_client),
            h_mode    = IF(slow = 0 AND h_id IS NULL, VALUES(h_mode), h_mode),
            h_call    = IF(slow = 0 AND h_id IS NULL, VALUES(h_call), h_call),
            h_at      = IF(slow = 0 AND h_id IS NULL, VALUES(h_at), h_at),
            h_id      = IF(slow = 0 AND h_id IS NULL, VALUES(h_id), h_id);
        SET v_n = ROW_COUNT();
    END IF;
    SELECT v_got, v_n, IF(v_n > 0, LAST_INSERT_ID(), 0);
END;
-- end
