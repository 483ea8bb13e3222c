-- {p}request is the slow path's request in one call, by lockcore's whole
-- rule under the identifier's mutex: the fast holder adopted, the granted
-- sets and the counts read in one read of the identifier's rows, a held
-- transaction gate counted ({p}gate_in) before the waiters are walked
-- (only when there are any), the session checked live and of this
-- incarnation. The engine's own transaction for it took about ten round
-- trips and the identifier's lock across all of them.
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
    DECLARE v_gmode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_nr BIGINT;
    DECLARE v_nw BIGINT;
    DECLARE v_np BIGINT;
    DECLARE waiting CURSOR FOR
        SELECT session_id, mode FROM {p}lock_requests
         WHERE kind = p_kind AND ns = p_ns AND name = p_name AND status = 'P' ORDER BY id;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    SET v_now = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6));
    SET SESSION group_concat_max_len = 1048576;
    SELECT gated INTO v_gated FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
    SELECT fence INTO v_fence FROM {p}lock_idents WHERE kind = p_kind AND ns = p_ns AND name = p_name;
    IF v_found = 0 THEN
        CALL {p}ident_take(p_kind, p_ns, p_name, v_gated, v_fence);
        SET v_found = 1;
    END IF;
    IF (p_inc IS NULL AND NOT EXISTS (SELECT 1 FROM {p}sessions s
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
        -- The granted sets and the counts, in one read of the
        -- identifier's rows (as {p}release_ident reads them).
        SELECT COALESCE(GROUP_CONCAT(DISTINCT IF(status = 'G' AND mode = 'W', session_id, NULL)), ''),
               COALESCE(GROUP_CONCAT(DISTINCT IF(status = 'G' AND mode = 'R', session_id, NULL)), ''),
               COALESCE(SUM(status = 'G' AND mode = 'R'), 0), COALESCE(SUM(status = 'G' AND mode = 'W'), 0),
               COALESCE(SUM(status <> 'G'), 0)
          INTO v_gw, v_gr, v_nr, v_nw, v_np
          FROM {p}lock_requests FORCE INDEX (lock_requests_ident)
         WHERE kind = p_kind AND ns = p_ns AND name = p_name;
        IF v_gated <> 0 THEN
            CALL {p}gate_mode(p_kind, p_ns, p_name, v_gmode);
            CALL {p}gate_in(v_gmode, v_gw, v_gr);
        END IF;
        IF v_np > 0 THEN
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
        END IF;
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
        -- The counts of the rows read, and the one stored.
        UPDATE {p}lock_idents
           SET fence = v_fence,
               n_r = v_nr + (v_id <> 0 AND v_ok AND p_mode = 'R'),
               n_w = v_nw + (v_id <> 0 AND v_ok AND p_mode = 'W'),
               n_p = v_np + (v_id <> 0 AND NOT v_ok)
         WHERE kind = p_kind AND ns = p_ns AND name = p_name;
        SELECT IF(v_id = 0, 'W', IF(v_ok, 'G', 'P')), v_id, IF(v_ok, v_fence, 0), COALESCE(v_hid, 0);
    END IF;
END;
-- end
