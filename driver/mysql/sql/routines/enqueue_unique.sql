-- A message with a unique key nobody holds is enqueued in one round trip
-- and one commit (message_insert_unique calls this procedure, outside any
-- transaction only): the message, then the key's row naming it, in a
-- transaction of the procedure's own, rolled back when the key exists.
-- A new key, the common case, costs two statements (reserving the key
-- first took three). Before, the engine sent the statements one by one:
-- five round trips. A key that exists leaves nothing done (but a gap in
-- the ids) and returns 0: the engine then decides in its own transaction
-- whether the key still holds. Arguments: message_insert's, then the key
-- and its expiry (microseconds, 0 for none).
DROP PROCEDURE IF EXISTS {p}enqueue_unique;
-- statement
CREATE PROCEDURE {p}enqueue_unique(
    IN p_queue VARCHAR(64) CHARACTER SET ascii, IN p_payload LONGBLOB, IN p_priority INT,
    IN p_key VARBINARY(255), IN p_delay BIGINT, IN p_order BIGINT, IN p_attempts INT,
    IN p_meta TEXT CHARACTER SET utf8mb4, IN p_kind VARCHAR(64) CHARACTER SET ascii,
    IN p_ukey VARBINARY(300), IN p_expires BIGINT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_id BIGINT DEFAULT 0;
    DECLARE v_now BIGINT;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    SET v_now = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6));
    INSERT INTO {p}messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind)
    VALUES (p_queue, p_payload, p_priority, p_key, v_now + p_delay, v_now + p_order, 0, p_attempts, 'R', '', v_now, p_meta, p_kind);
    SET v_id = LAST_INSERT_ID();
    INSERT INTO {p}unique_keys (queue, ukey, message_id, expires_at) VALUES (p_queue, p_ukey, v_id, p_expires)
        ON DUPLICATE KEY UPDATE message_id = message_id;
    IF ROW_COUNT() <> 1 THEN
        ROLLBACK;
        SET v_id = 0;
    END IF;
    COMMIT;
    SELECT v_id;
END;
-- end
