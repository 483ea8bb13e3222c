-- The slow path's request in one call (migration 024). The engine's own
-- transaction for a request that cannot take the fast path took about
-- ten round trips and the identifier's row lock across all of them; this
-- procedure takes one (on loopback the difference is within the
-- benchmarks' spread; over a network it is the round trips).

-- {p}grantable is lockcore's rule for one request (session, mode) given
-- the distinct sessions (comma-separated) with a granted writer or
-- reader and with an earlier waiting writer or reader: no other
-- session's conflicting instance, and the session holds one already or
-- no earlier waiter of another session conflicts.
DROP FUNCTION IF EXISTS {p}grantable;
-- statement
CREATE FUNCTION {p}grantable(p_sess VARCHAR(64) CHARACTER SET ascii, p_mode CHAR(1) CHARACTER SET ascii,
    p_gw TEXT CHARACTER SET ascii, p_gr TEXT CHARACTER SET ascii,
    p_ww TEXT CHARACTER SET ascii, p_wr TEXT CHARACTER SET ascii)
RETURNS TINYINT DETERMINISTIC NO SQL
BEGIN
    -- "Another session in set s": s is neither empty nor just p_sess.
    IF (p_gw <> '' AND p_gw <> p_sess) OR (p_mode = 'W' AND p_gr <> '' AND p_gr <> p_sess) THEN
        RETURN 0;
    END IF;
    IF FIND_IN_SET(p_sess, p_gw) > 0 OR FIND_IN_SET(p_sess, p_gr) > 0 THEN
        RETURN 1;
    END IF;
    IF (p_ww <> '' AND p_ww <> p_sess) OR (p_mode = 'W' AND p_wr <> '' AND p_wr <> p_sess) THEN
        RETURN 0;
    END IF;
    RETURN 1;
END;
-- end

DROP PROCEDURE IF EXISTS {p}request;
-- statement
CREATE PROCEDURE {p}request(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256),
    IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_client VARCHAR(64) CHARACTER SET ascii,
    IN p_mode CHAR(1) CHARACTER SET ascii, IN p_call BIGINT, IN p_try TINYINT, IN p_inc BIGINT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_fence BIGINT;
    DECLARE v_gated TINYINT;
    DECLARE v_found INT DEFAULT 1;
    DECLARE v_ffence BIGINT;
    DECLARE v_hid BIGINT;
    DECLARE v_hcall BIGINT;
    DECLARE v_hat BIGINT;
    DECLARE v_hsess VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_hclient VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_hmode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_ok TINYINT;
    DECLARE v_id BIGINT DEFAULT 0;
    DECLARE v_now BIGINT;
    DECLARE v_gw TEXT CHARACTER SET ascii DEFAULT '';
    DECLARE v_gr TEXT CHARACTER SET ascii DEFAULT '';
    DECLARE v_ww TEXT CHARACTER SET ascii DEFAULT '';
    DECLARE v_wr TEXT CHARACTER SET ascii DEFAULT '';
    DECLARE v_wsess VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_wmode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE waiting CURSOR FOR
        SELECT session_id, mode FROM {p}lock_requests
         WHERE kind = p_kind AND ns = p_ns AND name = p_name AND status = 'P' ORDER BY id;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    SET v_now = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6));
    SET SESSION group_concat_max_len = 1048576;
    SELECT fence, gated INTO v_fence, v_gated FROM {p}lock_idents
     WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
    IF v_found = 0 THEN
        -- Not INSERT IGNORE: see ident_ensure.
        INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p) VALUES (p_kind, p_ns, p_name, v_now, 0, 0, 0)
            ON DUPLICATE KEY UPDATE n_p = n_p;
        SET v_found = 1;
        SELECT fence, gated INTO v_fence, v_gated FROM {p}lock_idents
         WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
    END IF;
    IF v_gated <> 0 THEN
        SELECT 'F', 0, 0, 0;
    ELSEIF (p_inc IS NULL AND NOT EXISTS (SELECT 1 FROM {p}sessions s
                                           WHERE s.id = p_sess AND s.client_id = p_client AND s.expires_at > v_now
                                             AND s.incarnation = (SELECT id FROM {p}incarnation)))
        OR (p_inc <> 0 AND NOT EXISTS (SELECT 1 FROM {p}incarnation WHERE id = p_inc)) THEN
        SELECT 'X', 0, 0, 0;
    ELSE
        -- Adopt the fast holder: the statement that writes the MEMORY
        -- table reads no InnoDB table (mysql.sql, fast_engage).
        INSERT INTO {p}lock_fast (kind, ns, name, fence, slow) VALUES (p_kind, p_ns, p_name, 0, 1)
            ON DUPLICATE KEY UPDATE slow = 1;
        SELECT fence, h_id, h_session, h_client, h_mode, h_call, h_at
          INTO v_ffence, v_hid, v_hsess, v_hclient, v_hmode, v_hcall, v_hat
          FROM {p}lock_fast WHERE kind = p_kind AND ns = p_ns AND name = p_name;
        IF v_ffence > v_fence THEN
            SET v_fence = v_ffence;
        END IF;
        IF v_hid IS NOT NULL THEN
            INSERT IGNORE INTO {p}lock_requests (id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
            VALUES (v_hid, v_hsess, v_hclient, p_kind, p_ns, p_name, v_hmode, 'G', v_hcall, v_ffence, v_hat, v_hat);
        END IF;
        -- lockcore.Grants as it would run: the waiting requests front to
        -- back, each granted (in these sets only) when grantable, then
        -- the new one at the back. The sets are the distinct sessions
        -- with a granted (g) or waiting (w) reader (r) or writer (w).
        SELECT COALESCE(GROUP_CONCAT(DISTINCT session_id), '') INTO v_gw FROM {p}lock_requests
         WHERE kind = p_kind AND ns = p_ns AND name = p_name AND status = 'G' AND mode = 'W';
        SELECT COALESCE(GROUP_CONCAT(DISTINCT session_id), '') INTO v_gr FROM {p}lock_requests
         WHERE kind = p_kind AND ns = p_ns AND name = p_name AND status = 'G' AND mode = 'R';
        OPEN waiting;
        sim: LOOP
            FETCH waiting INTO v_wsess, v_wmode;
            IF v_found = 0 THEN
                LEAVE sim;
            END IF;
            IF {p}grantable(v_wsess, v_wmode, v_gw, v_gr, v_ww, v_wr) THEN
                IF v_wmode = 'W' AND FIND_IN_SET(v_wsess, v_gw) = 0 THEN
                    SET v_gw = CONCAT_WS(',', NULLIF(v_gw, ''), v_wsess);
                ELSEIF v_wmode = 'R' AND FIND_IN_SET(v_wsess, v_gr) = 0 THEN
                    SET v_gr = CONCAT_WS(',', NULLIF(v_gr, ''), v_wsess);
                END IF;
            ELSEIF v_wmode = 'W' AND FIND_IN_SET(v_wsess, v_ww) = 0 THEN
                SET v_ww = CONCAT_WS(',', NULLIF(v_ww, ''), v_wsess);
            ELSEIF v_wmode = 'R' AND FIND_IN_SET(v_wsess, v_wr) = 0 THEN
                SET v_wr = CONCAT_WS(',', NULLIF(v_wr, ''), v_wsess);
            END IF;
        END LOOP;
        CLOSE waiting;
        SET v_found = 1;
        SET v_ok = {p}grantable(p_sess, p_mode, v_gw, v_gr, v_ww, v_wr);
        IF v_ok OR p_try = 0 THEN
            IF v_ok THEN
                SET v_fence = v_fence + 1;
            END IF;
            INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
            VALUES (p_sess, p_client, p_kind, p_ns, p_name, p_mode, IF(v_ok, 'G', 'P'), p_call, IF(v_ok, v_fence, 0),
                    v_now, IF(v_ok, v_now, NULL));
            SET v_id = LAST_INSERT_ID();
        END IF;
        UPDATE {p}lock_idents
           SET fence = v_fence,
               n_r = (SELECT COUNT(*) FROM {p}lock_requests q
                       WHERE q.kind = p_kind AND q.ns = p_ns AND q.name = p_name AND q.status = 'G' AND q.mode = 'R'),
               n_w = (SELECT COUNT(*) FROM {p}lock_requests q
                       WHERE q.kind = p_kind AND q.ns = p_ns AND q.name = p_name AND q.status = 'G' AND q.mode = 'W'),
               n_p = (SELECT COUNT(*) FROM {p}lock_requests q
                       WHERE q.kind = p_kind AND q.ns = p_ns AND q.name = p_name AND q.status <> 'G')
         WHERE kind = p_kind AND ns = p_ns AND name = p_name;
        SELECT IF(v_id = 0, 'W', IF(v_ok, 'G', 'P')), v_id, IF(v_ok, v_fence, 0), COALESCE(v_hid, 0);
    END IF;
END;
-- end
