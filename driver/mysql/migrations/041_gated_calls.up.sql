-- Gated identifiers in one call (migration 041). A transaction that
-- holds a lock (Client.LockTx, migration 020) holds the identifier's
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

-- {p}gate_in adds a gate held in p_mode to the granted sessions' sets
-- {p}grantable reads (writers p_gw, readers p_gr) as the session '#gate',
-- which no session id can be (client.go's randomID makes them of hex
-- digits): another session's instance to every request.
DROP PROCEDURE IF EXISTS {p}gate_in;
-- statement
CREATE PROCEDURE {p}gate_in(IN p_mode CHAR(1) CHARACTER SET ascii, INOUT p_gw TEXT CHARACTER SET ascii,
    INOUT p_gr TEXT CHARACTER SET ascii)
NO SQL
BEGIN
    IF p_mode = 'W' THEN
        SET p_gw = CONCAT_WS(',', NULLIF(p_gw, ''), '#gate');
    ELSEIF p_mode = 'R' THEN
        SET p_gr = CONCAT_WS(',', NULLIF(p_gr, ''), '#gate');
    END IF;
END;
-- end

-- {p}request (migration 024) decides a request on a gated identifier
-- too, the gate counted ({p}gate_in) before the waiters are walked; it
-- no longer answers 'F'. It also reads the granted sets and the counts
-- in one read of the identifier's rows (two reads and three counts in
-- the counters' UPDATE were among its dearest statements: docs/
-- benchmarks.md, "Where a MariaDB slow-path call's time goes") and walks
-- the waiters only when there are any. Otherwise as migration 024 has
-- it.
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

-- {p}release_ident (migration 038) hands a gated identifier on too, the
-- gate counted; its entry's third member (gated: left to the engine) is
-- now always 0. A gated identifier is still never handed back to the
-- fast path. Otherwise as migration 038 has it.
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
    SELECT fence, n_r, n_w, n_p, gated INTO v_fence, v_nr, v_nw, v_np, v_gated FROM {p}lock_idents
     WHERE kind = p_kind AND ns = p_ns AND name = p_name;
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

-- {p}remove_requests (migration 039) withdraws requests of gated
-- identifiers too ({p}release_ident counts the gate); it no longer
-- answers -1. Otherwise as migration 039 has it.
DROP PROCEDURE IF EXISTS {p}remove_requests;
-- statement
CREATE PROCEDURE {p}remove_requests(IN p_reqs LONGTEXT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_found INT DEFAULT 1;
    DECLARE v_len INT DEFAULT JSON_LENGTH(p_reqs);
    DECLARE v_i INT DEFAULT 0;
    DECLARE v_pass INT DEFAULT 1;
    DECLARE v_id BIGINT;
    DECLARE v_kind INT;
    DECLARE v_ns VARBINARY(256);
    DECLARE v_name VARBINARY(256);
    DECLARE v_ckind INT DEFAULT NULL;
    DECLARE v_cns VARBINARY(256) DEFAULT NULL;
    DECLARE v_cname VARBINARY(256) DEFAULT NULL;
    DECLARE v_gated TINYINT;
    DECLARE v_slow TINYINT;
    DECLARE v_hid BIGINT;
    DECLARE v_mode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_status CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_n INT DEFAULT 0;
    DECLARE v_dr BIGINT DEFAULT 0;
    DECLARE v_dw BIGINT DEFAULT 0;
    DECLARE v_dp BIGINT DEFAULT 0;
    DECLARE v_fast TEXT CHARACTER SET ascii DEFAULT '';
    DECLARE v_gone TEXT CHARACTER SET ascii DEFAULT '';
    DECLARE v_one LONGTEXT;
    DECLARE v_idents LONGTEXT DEFAULT '[]';
    DECLARE v_grants LONGTEXT DEFAULT '[]';
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    -- Pass 1 locks each identifier's row (a missing one is not gated),
    -- pass 2 adopts each identifier's fast holder, pass 3 deletes and
    -- hands on; an identifier is handed on when the next entry names
    -- another one, or after the last.
    WHILE v_pass <= 3 DO
        SET v_i = 0, v_ckind = NULL, v_cns = NULL, v_cname = NULL;
        WHILE v_i <= v_len DO
            IF v_i < v_len THEN
                -- Numbers, or (a procedure's variables: withdraw_call)
                -- strings.
                SET v_id = JSON_UNQUOTE(JSON_EXTRACT(p_reqs, CONCAT('$[', v_i, '][0]'))),
                    v_kind = JSON_UNQUOTE(JSON_EXTRACT(p_reqs, CONCAT('$[', v_i, '][1]'))),
                    v_ns = UNHEX(JSON_UNQUOTE(JSON_EXTRACT(p_reqs, CONCAT('$[', v_i, '][2]')))),
                    v_name = UNHEX(JSON_UNQUOTE(JSON_EXTRACT(p_reqs, CONCAT('$[', v_i, '][3]'))));
            END IF;
            IF v_ckind IS NOT NULL AND (v_i = v_len OR v_kind <> v_ckind OR v_ns <> v_cns OR v_name <> v_cname) THEN
                IF v_pass = 3 AND v_dr = 0 AND v_dw = 0 AND NOT EXISTS (
                        SELECT 1 FROM {p}lock_requests FORCE INDEX (lock_requests_ident)
                         WHERE kind = v_ckind AND ns = v_cns AND name = v_cname AND status = 'P') THEN
                    -- Only requests that were not granted went, and none
                    -- waits any more: nothing to hand on (the common
                    -- undo of a wait that timed out), the waiting count
                    -- lowered.
                    UPDATE {p}lock_idents SET n_p = GREATEST(n_p - v_dp, 0)
                     WHERE kind = v_ckind AND ns = v_cns AND name = v_cname;
                    SET v_idents = JSON_ARRAY_APPEND(v_idents, '$', JSON_ARRAY(v_ckind, HEX(v_cns), JSON_ARRAY(HEX(v_cname), 0, 0, 0, 0)));
                    SET v_dp = 0, v_fast = '';
                ELSEIF v_pass = 3 THEN
                    SET v_one = '[]';
                    CALL {p}release_ident(v_ckind, v_cns, v_cname, v_dr, v_dw, v_fast, v_one, v_grants);
                    SET v_idents = JSON_ARRAY_APPEND(v_idents, '$', JSON_ARRAY(v_ckind, HEX(v_cns), JSON_EXTRACT(v_one, '$[0]')));
                    SET v_dr = 0, v_dw = 0, v_dp = 0, v_fast = '';
                END IF;
                SET v_ckind = NULL;
            END IF;
            IF v_i < v_len THEN
                IF v_ckind IS NULL THEN
                    SET v_ckind = v_kind, v_cns = v_ns, v_cname = v_name;
                    IF v_pass = 1 THEN
                        SELECT gated INTO v_gated FROM {p}lock_idents
                         WHERE kind = v_kind AND ns = v_ns AND name = v_name FOR UPDATE;
                        SET v_found = 1;
                    ELSEIF v_pass = 2 THEN
                        -- Only where the fast path may still own the
                        -- identifier or name a holder not adopted yet.
                        SET v_slow = 0, v_hid = NULL;
                        SELECT slow, h_id INTO v_slow, v_hid FROM {p}lock_fast
                         WHERE kind = v_kind AND ns = v_ns AND name = v_name;
                        SET v_found = 1;
                        IF v_slow = 0 OR v_hid IS NOT NULL THEN
                            CALL {p}adopt_ident(v_kind, v_ns, v_name);
                        END IF;
                    END IF;
                END IF;
                IF v_pass = 3 THEN
                    SET v_mode = NULL, v_status = NULL;
                    -- Only a row of the identifier whose row lock the
                    -- call holds.
                    SELECT mode, status INTO v_mode, v_status FROM {p}lock_requests FORCE INDEX (PRIMARY)
                     WHERE id = v_id AND kind = v_kind AND ns = v_ns AND name = v_name FOR UPDATE;
                    SET v_found = 1;
                    IF v_status IS NOT NULL THEN
                        DELETE FROM {p}lock_requests WHERE id = v_id;
                        SET v_n = v_n + 1;
                        IF v_status = 'G' THEN
                            SET v_dr = v_dr + (v_mode = 'R'), v_dw = v_dw + (v_mode = 'W');
                        ELSE
                            SET v_dp = v_dp + 1;
                        END IF;
                        IF v_id < 0 THEN
                            SET v_fast = CONCAT_WS(',', NULLIF(v_fast, ''), v_id),
                                v_gone = CONCAT_WS(',', NULLIF(v_gone, ''), v_id);
                        END IF;
                    END IF;
                END IF;
            END IF;
            SET v_i = v_i + 1;
        END WHILE;
        SET v_pass = v_pass + 1;
    END WHILE;
    -- The deleted holders' fast rows (fast_clear_ids), after every
    -- InnoDB write.
    WHILE v_gone <> '' DO
        UPDATE {p}lock_fast FORCE INDEX (lock_fast_holder)
           SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
         WHERE h_id = CAST(SUBSTRING_INDEX(v_gone, ',', 1) AS SIGNED) AND slow = 1;
        SET v_gone = IF(LOCATE(',', v_gone) > 0, SUBSTRING(v_gone, LOCATE(',', v_gone) + 1), '');
    END WHILE;
    COMMIT;
    SELECT v_n, v_idents, v_grants;
END;
-- end

-- {p}regrant_call hands identifiers on (driver.Driver's LockRegrant: the
-- engine's look at names a transaction's end may have freed, and at
-- names it was told to hand on), which was the engine's transaction:
-- p_idents is a JSON array of [kind, hex namespace, hex name], sorted by
-- identifier; each row is locked in turn (a missing one has nothing to
-- hand on) and handed on by {p}release_ident; the call commits. One row
-- as {p}remove_requests answers (0 requests deleted).
DROP PROCEDURE IF EXISTS {p}regrant_call;
-- statement
CREATE PROCEDURE {p}regrant_call(IN p_idents LONGTEXT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_i INT DEFAULT 0;
    DECLARE v_found INT DEFAULT 1;
    DECLARE v_kind INT;
    DECLARE v_ns VARBINARY(256);
    DECLARE v_name VARBINARY(256);
    DECLARE v_gated TINYINT;
    DECLARE v_one LONGTEXT;
    DECLARE v_idents LONGTEXT DEFAULT '[]';
    DECLARE v_grants LONGTEXT DEFAULT '[]';
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    WHILE v_i < JSON_LENGTH(p_idents) DO
        SET v_kind = JSON_UNQUOTE(JSON_EXTRACT(p_idents, CONCAT('$[', v_i, '][0]'))),
            v_ns = UNHEX(JSON_UNQUOTE(JSON_EXTRACT(p_idents, CONCAT('$[', v_i, '][1]')))),
            v_name = UNHEX(JSON_UNQUOTE(JSON_EXTRACT(p_idents, CONCAT('$[', v_i, '][2]'))));
        SET v_found = 1;
        SELECT gated INTO v_gated FROM {p}lock_idents
         WHERE kind = v_kind AND ns = v_ns AND name = v_name FOR UPDATE;
        IF v_found = 1 THEN
            SET v_one = '[]';
            CALL {p}release_ident(v_kind, v_ns, v_name, 0, 0, '', v_one, v_grants);
            SET v_idents = JSON_ARRAY_APPEND(v_idents, '$', JSON_ARRAY(v_kind, HEX(v_ns), JSON_EXTRACT(v_one, '$[0]')));
        END IF;
        SET v_i = v_i + 1;
    END WHILE;
    COMMIT;
    SELECT 0, v_idents, v_grants;
END;
-- end
