-- {p}claim_limited is the claim of a queue whose limits are a concurrency
-- and/or a rate without partitions (migration 002), in one call and a
-- transaction of its own (claim_limited_one calls it, outside any
-- transaction only): the queue's row locked, which serializes the queue's
-- limited claims with queue_limits_lock's; the running messages and the
-- rate's buckets read after it (READ COMMITTED: each statement sees what
-- committed before it); then it claims the ready messages the limits allow
-- in serving order and counts their starts, as the engine's limited claim
-- does (internal/queue/limits.go: buckets of per/16, counted while they
-- overlap the window (now-per, now]). It commits and returns the claimed
-- messages; none when the queue is paused, has no such limits
-- (partitions, none) or no room: the engine then takes its limited
-- claim, which knows why. The candidates are not a locking read: the row
-- lock serializes the limited claims, and the claim takes only what is
-- still ready. Arguments as claim_ids_parallel's, then queue, limit and
-- kind ('' for any).
DROP PROCEDURE IF EXISTS {p}claim_limited;
-- statement
CREATE PROCEDURE {p}claim_limited(IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_mode INT, IN p_lease BIGINT,
    IN p_queue VARCHAR(64) CHARACTER SET ascii, IN p_lim INT, IN p_kind VARCHAR(64) CHARACTER SET ascii)
MODIFIES SQL DATA
BEGIN
    DECLARE v_l TEXT CHARACTER SET utf8mb4 DEFAULT NULL;
    DECLARE v_now BIGINT;
    DECLARE v_per BIGINT;
    DECLARE v_width BIGINT;
    DECLARE v_budget BIGINT DEFAULT p_lim;
    DECLARE v_room BIGINT;
    DECLARE v_stale INT DEFAULT 0;
    DECLARE v_n INT DEFAULT 0;
    DECLARE v_ids LONGTEXT CHARACTER SET utf8mb4 DEFAULT NULL;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    SET v_l = (SELECT limits FROM {p}queues WHERE name = p_queue AND paused = 0 FOR UPDATE);
    IF v_l IS NOT NULL AND NOT JSON_EXISTS(v_l, '$.partition_by') THEN
        SET v_now = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6));
        IF JSON_EXISTS(v_l, '$.concurrency') THEN
            SELECT JSON_VALUE(v_l, '$.concurrency') - COUNT(*) INTO v_room
              FROM {p}messages FORCE INDEX (messages_ready) WHERE queue = p_queue AND state = 'C';
            SET v_budget = LEAST(v_budget, v_room);
        END IF;
        IF JSON_EXISTS(v_l, '$.rate') THEN
            SET v_per = JSON_VALUE(v_l, '$.per_ns') DIV 1000;
            SET v_width = GREATEST(v_per DIV 16, 1);
            SELECT JSON_VALUE(v_l, '$.rate') - COALESCE(SUM(IF(bucket_end > v_now - v_per, n, 0)), 0),
                   COALESCE(MAX(bucket_end <= v_now - v_per), 0)
              INTO v_room, v_stale FROM {p}queue_starts WHERE queue = p_queue;
            SET v_budget = LEAST(v_budget, v_room);
        END IF;
        IF v_budget > 0 THEN
            SELECT JSON_ARRAYAGG(c.id) INTO v_ids FROM (
                SELECT id FROM {p}messages FORCE INDEX (messages_ready)
                 WHERE queue = p_queue AND state = 'R' AND run_at <= v_now AND (p_kind = '' OR kind = p_kind)
                 ORDER BY priority, order_at, id LIMIT v_budget) c;
        END IF;
        IF v_ids IS NOT NULL THEN
            UPDATE {p}messages m JOIN JSON_TABLE(v_ids, '$[*]' COLUMNS (id BIGINT PATH '$')) j ON m.id = j.id
               SET m.state = 'C', m.claimed_by = p_sess, m.claim_mode = p_mode, m.claim_until = v_now + p_lease,
                   m.attempt = m.attempt + 1
             WHERE m.state = 'R';
            SET v_n = ROW_COUNT();
        END IF;
        IF v_n > 0 AND JSON_EXISTS(v_l, '$.rate') THEN
            -- The starts, in the bucket of now.
            INSERT INTO {p}queue_starts (queue, part, bucket_end, n) VALUES (p_queue, '', (v_now DIV v_width + 1) * v_width, v_n)
            ON DUPLICATE KEY UPDATE n = n + VALUES(n);
        END IF;
        IF v_stale THEN
            -- Buckets that no window overlaps any more.
            DELETE FROM {p}queue_starts WHERE queue = p_queue AND bucket_end <= v_now - v_per;
        END IF;
    END IF;
    COMMIT;
    SELECT id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel
      FROM {p}messages
     WHERE v_n > 0 AND id IN (SELECT j.id FROM JSON_TABLE(v_ids, '$[*]' COLUMNS (id BIGINT PATH '$')) j)
       AND state = 'C' AND claimed_by = p_sess;
END;
-- end
