-- The release of one instance of a re-entered name in a few statements
-- (migration 043). RELEASE_LOCK releases the newest instance of a name
-- the session may hold several times; {p}release_instances (migration
-- 038) does it by the whole release: the session's instances counted
-- and walked, the identifier handed on ({p}release_ident), the fast
-- rows cleared, the hand-back to the fast path tried, about fourteen
-- statements, whose cost, more than the redo log's flush, is a
-- slow-path call's on MariaDB (docs/benchmarks.md, "Where a MariaDB
-- slow-path call's time goes").
--
-- {p}release_one takes {p}release_instances' arguments and answers as
-- it does. For one instance of one name (p_limit 1, p_name set) whose
-- session has no fast holder left to adopt (p_signal not 3), under the
-- identifier's row lock: when another of the session's granted
-- instances there covers the newest one's mode (a writer's for a
-- writer's, any for a reader's), nothing can be handed on (what the
-- newest excluded, the covering one still does), so the newest is
-- deleted and counted out, the fast row's adopted-holder mark cleared
-- as {p}release_instances clears it, and the call commits. Otherwise
-- {p}release_instances releases it.
DROP PROCEDURE IF EXISTS {p}release_one;
-- statement
CREATE PROCEDURE {p}release_one(IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_kind INT,
    IN p_ns VARBINARY(256), IN p_name VARBINARY(256), IN p_signal TINYINT, IN p_limit INT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_done TINYINT DEFAULT 0;
    DECLARE v_np BIGINT DEFAULT 0;
    IF p_limit = 1 AND p_name IS NOT NULL AND p_signal <> 3 THEN
        one: BEGIN
            DECLARE v_found INT DEFAULT 1;
            DECLARE v_id BIGINT DEFAULT NULL;
            DECLARE v_mode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
            DECLARE v_cover BIGINT DEFAULT 0;
            DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
            SELECT n_p INTO v_np FROM {p}lock_idents
             WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
            IF v_found = 0 THEN
                LEAVE one;
            END IF;
            SELECT id, mode INTO v_id, v_mode FROM {p}lock_requests FORCE INDEX (lock_requests_session)
             WHERE session_id = p_sess AND kind = p_kind AND ns = p_ns AND name = p_name AND status = 'G'
             ORDER BY id DESC LIMIT 1;
            IF v_id IS NULL THEN
                LEAVE one;
            END IF;
            SELECT COUNT(*) INTO v_cover FROM {p}lock_requests FORCE INDEX (lock_requests_session)
             WHERE session_id = p_sess AND kind = p_kind AND ns = p_ns AND name = p_name AND status = 'G'
               AND id <> v_id AND (mode = 'W' OR v_mode = 'R');
            IF v_cover = 0 THEN
                LEAVE one;
            END IF;
            DELETE FROM {p}lock_requests WHERE id = v_id;
            UPDATE {p}lock_idents SET n_r = n_r - (v_mode = 'R'), n_w = n_w - (v_mode = 'W')
             WHERE kind = p_kind AND ns = p_ns AND name = p_name;
            IF p_signal <> 0 THEN
                UPDATE {p}lock_fast FORCE INDEX (lock_fast_session)
                   SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
                 WHERE h_session = p_sess AND kind = p_kind AND ns = p_ns AND name = p_name AND slow = 1 AND h_id IS NULL;
            END IF;
            SET v_done = 1;
        END one;
    END IF;
    IF v_done THEN
        COMMIT;
        SELECT 1, JSON_ARRAY(JSON_ARRAY(HEX(p_name), IF(v_np > 0, 1, 0), 0, 0, 0)), '[]';
    ELSE
        CALL {p}release_instances(p_sess, p_kind, p_ns, p_name, p_signal, p_limit);
    END IF;
END;
-- end
