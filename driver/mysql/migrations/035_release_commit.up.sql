-- A release through InnoDB and its hand-on in one call (migration 035).
-- The slow path's release had been the client's transaction of about ten
-- statements: the session's request rows selected FOR UPDATE and
-- deleted, each identifier's counters lowered, the fast rows of released
-- holders cleared, then for each identifier with waiters its row locked
-- again, its fast holder adopted, its request rows read and the grants
-- and counters stored, then COMMIT. The identifier's row lock was held
-- across all those round trips, and a waiter heard of its grant only
-- after the last. {p}release_commit does the same in the server and
-- commits: one round trip, the row locks held only while the server
-- works (docs/benchmarks.md, "MariaDB: the release and its hand-on in
-- one call").
--
-- It covers the releases of every instance the session holds of one name
-- or of a namespace. A release with a limit (one instance of a re-entered
-- lock) and one that must first adopt the session's own fast holders (a
-- signal of 3 from fast_release_*) stay the client's transaction
-- (fastlocks.go, releaseSlow). The grants come back to the client, which
-- hands them to waiters in its process and wakes other processes' clients
-- after the commit (the listeners' poll interval is the safety net if it
-- cannot). A gated identifier (a transaction-scoped lock) is not handed
-- on here: only the engine probes gates.

-- {p}release_ident lowers one identifier's counters by the released
-- instances (p_dr readers, p_dw writers) and, when others wait and no
-- transaction gates it, hands it on by lockcore.Regrant's rule: the fast
-- holder adopted first (as {p}request does), each waiting request front
-- to back granted when {p}grantable allows, with the next fence as its
-- token, then the fence and the counters stored. It appends the
-- identifier to p_idents ([hex name, waiting, gated, adopted holder id,
-- free]: free when its counters are all 0 and no transaction gates it,
-- fast_demote_free's test, which the client then skips) and its grants to
-- p_grants ([id, session, client, call, token]).
DROP PROCEDURE IF EXISTS {p}release_ident;
-- statement
CREATE PROCEDURE {p}release_ident(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256),
    IN p_dr BIGINT, IN p_dw BIGINT, INOUT p_idents LONGTEXT, INOUT p_grants LONGTEXT)
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
    IF v_np > 0 AND v_gated = 0 THEN
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
    SET p_idents = JSON_ARRAY_APPEND(p_idents, '$', JSON_ARRAY(HEX(p_name), IF(v_np > 0, 1, 0), IF(v_gated <> 0, 1, 0), COALESCE(v_hid, 0),
        IF(v_row = 1 AND v_nr = 0 AND v_nw = 0 AND v_np2 = 0 AND v_gated = 0, 1, 0)));
END;
-- end

-- {p}release_commit releases every instance the session holds of one name
-- (p_name) or of a namespace (p_name NULL) through InnoDB, hands each
-- identifier on ({p}release_ident, in name order: the canonical order of
-- every multi-identifier operation), clears the fast rows of the released
-- holders the slow path had taken over (p_fast: fast_release_* saw such
-- rows; fast_clear_hints_* with every holder cleared), commits, and then
-- returns one row: the instances released, the identifiers and the
-- grants. The session's rows are selected FOR UPDATE through its own
-- index first (release_list_ns says why it is forced), as a range of
-- names: one name, or all of them.
DROP PROCEDURE IF EXISTS {p}release_commit;
-- statement
CREATE PROCEDURE {p}release_commit(IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_kind INT,
    IN p_ns VARBINARY(256), IN p_name VARBINARY(256), IN p_fast TINYINT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_found INT DEFAULT 1;
    DECLARE v_lo VARBINARY(256) DEFAULT COALESCE(p_name, '');
    DECLARE v_hi VARBINARY(256) DEFAULT COALESCE(p_name, REPEAT(X'FF', 256));
    DECLARE v_n INT DEFAULT 0;
    DECLARE v_id BIGINT;
    DECLARE v_name VARBINARY(256);
    DECLARE v_mode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_cur VARBINARY(256) DEFAULT NULL;
    DECLARE v_dr BIGINT DEFAULT 0;
    DECLARE v_dw BIGINT DEFAULT 0;
    DECLARE v_idents LONGTEXT DEFAULT '[]';
    DECLARE v_grants LONGTEXT DEFAULT '[]';
    DECLARE mine CURSOR FOR
        SELECT id, name, mode FROM {p}lock_requests FORCE INDEX (lock_requests_session)
         WHERE session_id = p_sess AND kind = p_kind AND ns = p_ns AND name >= v_lo AND name <= v_hi AND status = 'G'
         ORDER BY name, id
           FOR UPDATE;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    OPEN mine;
    rel: LOOP
        FETCH mine INTO v_id, v_name, v_mode;
        IF v_found = 0 THEN
            LEAVE rel;
        END IF;
        IF v_cur IS NOT NULL AND v_name <> v_cur THEN
            CALL {p}release_ident(p_kind, p_ns, v_cur, v_dr, v_dw, v_idents, v_grants);
            SET v_dr = 0, v_dw = 0;
        END IF;
        SET v_cur = v_name;
        DELETE FROM {p}lock_requests WHERE id = v_id;
        IF v_mode = 'W' THEN
            SET v_dw = v_dw + 1;
        ELSE
            SET v_dr = v_dr + 1;
        END IF;
        SET v_n = v_n + 1;
    END LOOP;
    CLOSE mine;
    IF v_cur IS NOT NULL THEN
        CALL {p}release_ident(p_kind, p_ns, v_cur, v_dr, v_dw, v_idents, v_grants);
        IF p_fast <> 0 THEN
            UPDATE {p}lock_fast FORCE INDEX (lock_fast_session)
               SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
             WHERE h_session = p_sess AND kind = p_kind AND ns = p_ns AND name >= v_lo AND name <= v_hi AND slow = 1;
        END IF;
    END IF;
    COMMIT;
    SELECT v_n, v_idents, v_grants;
END;
-- end
