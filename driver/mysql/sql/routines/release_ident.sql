-- {p}release_ident hands one identifier on after a release or a
-- withdrawal, under its mutex: the waiting requests the rule grants are
-- granted in queue order (a gated identifier's gate counted), the
-- counters counted again from the rows, and the identifier handed back to
-- the fast path when nothing of it is left in the slow path (never a gated
-- one). Its entry's third member (gated: left to the engine) is always 0.
DROP PROCEDURE IF EXISTS {p}release_ident;
-- statement
CREATE PROCEDURE {p}release_ident(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256),
    IN p_dr BIGINT, IN p_dw BIGINT, IN p_gone TEXT CHARACTER SET ascii, INOUT p_idents LONGTEXT, INOUT p_grants LONGTEXT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_found INT DEFAULT 1;
    DECLARE v_fence BIGINT;
    DECLARE v_np BIGINT DEFAULT 0;
    DECLARE v_gated TINYINT DEFAULT 0;
    DECLARE v_nr BIGINT;
    DECLARE v_nw BIGINT;
    DECLARE v_np2 BIGINT;
    DECLARE v_row TINYINT DEFAULT 1;
    DECLARE v_ffence BIGINT;
    DECLARE v_hid BIGINT DEFAULT NULL;
    DECLARE v_hcall BIGINT;
    DECLARE v_hat BIGINT;
    DECLARE v_hsess VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_hclient VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_hmode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_now BIGINT;
    DECLARE v_gw TEXT CHARACTER SET ascii DEFAULT '';
    DECLARE v_gr TEXT CHARACTER SET ascii DEFAULT '';
    DECLARE v_ww TEXT CHARACTER SET ascii DEFAULT '';
    DECLARE v_wr TEXT CHARACTER SET ascii DEFAULT '';
    DECLARE v_wid BIGINT;
    DECLARE v_wcall BIGINT;
    DECLARE v_wsess VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_wclient VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_wmode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_gmode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE waiting CURSOR FOR
        SELECT id, session_id, client_id, mode, call_id FROM {p}lock_requests FORCE INDEX (lock_requests_ident)
         WHERE kind = p_kind AND ns = p_ns AND name = p_name AND status = 'P' ORDER BY id;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    -- ident_release, then the row as this transaction left it (no row:
    -- nothing waits, and nothing is left to hand back to the fast path).
    UPDATE {p}lock_idents SET n_r = n_r - p_dr, n_w = n_w - p_dw
     WHERE kind = p_kind AND ns = p_ns AND name = p_name;
    SELECT i.fence, i.n_r, i.n_w, i.n_p, COALESCE(m.gated, 0) INTO v_fence, v_nr, v_nw, v_np, v_gated
      FROM {p}lock_idents i LEFT JOIN {p}lock_mutex m ON m.kind = i.kind AND m.ns = i.ns AND m.name = i.name
     WHERE i.kind = p_kind AND i.ns = p_ns AND i.name = p_name;
    IF v_found = 0 THEN
        SET v_found = 1, v_row = 0, v_np = 0, v_gated = 0;
    END IF;
    SET v_np2 = v_np;
    IF v_np > 0 THEN
        SET v_now = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6));
        SET SESSION group_concat_max_len = 1048576;
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
        IF FIND_IN_SET(v_hid, p_gone) > 0 THEN
            SET v_hid = NULL;
        END IF;
        IF v_hid IS NOT NULL THEN
            INSERT IGNORE INTO {p}lock_requests (id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
            VALUES (v_hid, v_hsess, v_hclient, p_kind, p_ns, p_name, v_hmode, 'G', v_hcall, v_ffence, v_hat, v_hat);
        END IF;
        -- lockcore.Grants: the granted sets {p}request reads, and the
        -- counts lockcore.Counts takes, in one read of the identifier's
        -- rows; then the waiting requests front to back, each granted
        -- when grantable (the fence moves for each, as lockcore.Regrant
        -- moves it, even for one withdrawn meanwhile) and counted as
        -- granted once its row says so.
        SELECT COALESCE(GROUP_CONCAT(DISTINCT IF(status = 'G' AND mode = 'W', session_id, NULL)), ''),
               COALESCE(GROUP_CONCAT(DISTINCT IF(status = 'G' AND mode = 'R', session_id, NULL)), ''),
               COALESCE(SUM(status = 'G' AND mode = 'R'), 0), COALESCE(SUM(status = 'G' AND mode = 'W'), 0),
               COALESCE(SUM(status <> 'G'), 0)
          INTO v_gw, v_gr, v_nr, v_nw, v_np2
          FROM {p}lock_requests FORCE INDEX (lock_requests_ident)
         WHERE kind = p_kind AND ns = p_ns AND name = p_name;
        IF v_gated <> 0 THEN
            CALL {p}gate_mode(p_kind, p_ns, p_name, v_gmode);
            CALL {p}gate_in(v_gmode, v_gw, v_gr);
        END IF;
        OPEN waiting;
        hand: LOOP
            FETCH waiting INTO v_wid, v_wsess, v_wclient, v_wmode, v_wcall;
            IF v_found = 0 THEN
                LEAVE hand;
            END IF;
            IF {p}grantable(v_wsess, v_wmode, v_gw, v_gr, v_ww, v_wr) THEN
                SET v_fence = v_fence + 1;
                -- request_set_status
                UPDATE {p}lock_requests r FORCE INDEX (PRIMARY) JOIN (SELECT 'G' AS st, v_fence AS tok) v
                   SET r.granted_at = v_now, r.status = v.st, r.token = v.tok
                 WHERE r.id = v_wid AND r.status = 'P';
                IF ROW_COUNT() = 1 THEN
                    SET p_grants = JSON_ARRAY_APPEND(p_grants, '$', JSON_ARRAY(v_wid, v_wsess, v_wclient, v_wcall, v_fence));
                    SET v_np2 = v_np2 - 1, v_nr = v_nr + (v_wmode = 'R'), v_nw = v_nw + (v_wmode = 'W');
                END IF;
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
        UPDATE {p}lock_idents SET fence = v_fence, n_r = v_nr, n_w = v_nw, n_p = v_np2
         WHERE kind = p_kind AND ns = p_ns AND name = p_name;
    END IF;
    SET p_idents = JSON_ARRAY_APPEND(p_idents, '$', JSON_ARRAY(HEX(p_name), IF(v_np > 0, 1, 0), 0, COALESCE(v_hid, 0),
        IF(v_row = 1 AND v_nr = 0 AND v_nw = 0 AND v_np2 = 0 AND v_gated = 0, 1, 0)));
END;
-- end
