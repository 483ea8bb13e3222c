-- Every slow-path release in one call (migration 038). Migration 035's
-- {p}release_commit released all of a session's instances of a name or
-- namespace in one call, but two kinds of release stayed the client's
-- transaction of about ten statements, each a round trip under the
-- identifiers' row locks: one with a limit (RELEASE_LOCK: the newest
-- instance of a re-entered lock) and one that must first adopt the
-- session's own fast holders the slow path took over (fast_release_*'s
-- signal 3). {p}release_instances does both in the server, so that
-- every change the slow path makes to the lock state is one procedure
-- call (the step before the lock state leaves InnoDB: a MEMORY table's
-- writes cannot be rolled back, so they must not be spread over a
-- client's round trips).
--
-- {p}release_commit keeps its parameters and result (a client of the
-- previous version calls it) and is now {p}release_instances without a
-- limit.

-- {p}adopt_ident adopts an identifier's fast holder under the
-- identifier's row lock, as the client's adopt did (fastlocks.go): the
-- row locked (created when missing, as ident_ensure does), the slow path
-- made the owner of the identifier (fast_engage), the holder made a
-- request row under its own id unless it is one already, and the fence
-- and counters made to count what happened outside InnoDB. Its fast row
-- keeps h_id: the release that deletes the instance clears it, and a
-- holder left there costs a later adoption a look (INSERT IGNORE).
DROP PROCEDURE IF EXISTS {p}adopt_ident;
-- statement
CREATE PROCEDURE {p}adopt_ident(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256))
MODIFIES SQL DATA
BEGIN
    DECLARE v_found INT DEFAULT 1;
    DECLARE v_changed TINYINT DEFAULT 0;
    DECLARE v_fence BIGINT;
    DECLARE v_nr BIGINT;
    DECLARE v_nw BIGINT;
    DECLARE v_ffence BIGINT;
    DECLARE v_hid BIGINT DEFAULT NULL;
    DECLARE v_hcall BIGINT;
    DECLARE v_hat BIGINT;
    DECLARE v_hsess VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_hclient VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_hmode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    SELECT fence, n_r, n_w INTO v_fence, v_nr, v_nw FROM {p}lock_idents
     WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
    IF v_found = 0 THEN
        -- Not INSERT IGNORE: see ident_ensure.
        INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p)
        VALUES (p_kind, p_ns, p_name, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), 0, 0, 0)
            ON DUPLICATE KEY UPDATE n_p = n_p;
        SET v_found = 1;
        SELECT fence, n_r, n_w INTO v_fence, v_nr, v_nw FROM {p}lock_idents
         WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
    END IF;
    -- Adopt the fast holder: the statement that writes the MEMORY
    -- table reads no InnoDB table (mysql.sql, fast_engage).
    INSERT INTO {p}lock_fast (kind, ns, name, fence, slow) VALUES (p_kind, p_ns, p_name, 0, 1)
        ON DUPLICATE KEY UPDATE slow = 1;
    SELECT fence, h_id, h_session, h_client, h_mode, h_call, h_at
      INTO v_ffence, v_hid, v_hsess, v_hclient, v_hmode, v_hcall, v_hat
      FROM {p}lock_fast WHERE kind = p_kind AND ns = p_ns AND name = p_name;
    IF v_ffence > v_fence THEN
        SET v_fence = v_ffence, v_changed = 1;
    END IF;
    IF v_hid IS NOT NULL THEN
        INSERT IGNORE INTO {p}lock_requests (id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
        VALUES (v_hid, v_hsess, v_hclient, p_kind, p_ns, p_name, v_hmode, 'G', v_hcall, v_ffence, v_hat, v_hat);
        IF ROW_COUNT() = 1 THEN
            SET v_nr = v_nr + (v_hmode = 'R'), v_nw = v_nw + (v_hmode = 'W'), v_changed = 1;
        END IF;
    END IF;
    IF v_changed THEN
        UPDATE {p}lock_idents SET fence = v_fence, n_r = v_nr, n_w = v_nw
         WHERE kind = p_kind AND ns = p_ns AND name = p_name;
    END IF;
END;
-- end

-- {p}release_ident (migration 035) hands an identifier on after a
-- release, adopting its fast holder first. Its caller now also names the
-- holders it has just released (p_gone: their ids, comma-separated): a
-- released holder's fast row is cleared only at the end of the call
-- (below), and adopting it here would make the instance a granted
-- request row again, held by a session that has let it go (a signal 3
-- release, whose holder's row still had h_id, did that before this
-- parameter). The rest is as migration 035 has it.
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

-- {p}release_instances releases the session's instances of one name
-- (p_name) or of a namespace (p_name NULL) through InnoDB, hands each
-- identifier on ({p}release_ident, in name order), commits, and returns
-- one row: the instances released, the identifiers and the grants
-- (release_call in mysql.sql; fastlocks.go's parseReleaseCall reads
-- them).
--
-- p_signal is what fast_release_* saw of the session's fast holders the
-- slow path took over: 3 some perhaps not adopted yet, which are adopted
-- first, each under its identifier's row lock ({p}adopt_ident, in name
-- order); 1 adopted ones only; 0 none (no fast row names the session's
-- instances, and none is cleared). p_limit 0 releases every instance;
-- otherwise, with a name (as driver.FastReleaseParams' Limit), the
-- newest p_limit (by id, as sqldriver.ReleaseTaken takes them: the last
-- ones in the index's order). The session's rows are selected FOR
-- UPDATE through its own index (release_list_ns says why it is forced),
-- as a range of names: one name, or all of them. The fast rows of
-- released holders are cleared last, after every InnoDB write (the
-- MEMORY table's changes are not rolled back: a holder this call adopted
-- and released, its row cleared before a rollback, would be lost; until
-- then {p}release_ident is told which holders are gone): when every
-- instance went, all of the session's rows the slow path owns in the scope;
-- otherwise those of the released ids (as fast_clear_ids) and the rows
-- whose holders are marked adopted (h_id NULL: fast_adopted), whose
-- h_session only told the release to come here.
DROP PROCEDURE IF EXISTS {p}release_instances;
-- statement
CREATE PROCEDURE {p}release_instances(IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_kind INT,
    IN p_ns VARBINARY(256), IN p_name VARBINARY(256), IN p_signal TINYINT, IN p_limit INT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_found INT DEFAULT 1;
    DECLARE v_lo VARBINARY(256) DEFAULT COALESCE(p_name, '');
    DECLARE v_hi VARBINARY(256) DEFAULT COALESCE(p_name, REPEAT(X'FF', 256));
    DECLARE v_skip BIGINT DEFAULT 0;
    DECLARE v_n INT DEFAULT 0;
    DECLARE v_id BIGINT;
    DECLARE v_name VARBINARY(256);
    DECLARE v_mode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
    DECLARE v_cur VARBINARY(256) DEFAULT NULL;
    DECLARE v_dr BIGINT DEFAULT 0;
    DECLARE v_dw BIGINT DEFAULT 0;
    DECLARE v_fast TEXT CHARACTER SET ascii DEFAULT '';
    DECLARE v_idents LONGTEXT DEFAULT '[]';
    DECLARE v_grants LONGTEXT DEFAULT '[]';
    DECLARE held CURSOR FOR
        SELECT name FROM {p}lock_fast
         WHERE h_session = p_sess AND kind = p_kind AND ns = p_ns AND name >= v_lo AND name <= v_hi
           AND slow = 1 AND h_id IS NOT NULL
         ORDER BY name;
    DECLARE mine CURSOR FOR
        SELECT id, name, mode FROM {p}lock_requests FORCE INDEX (lock_requests_session)
         WHERE session_id = p_sess AND kind = p_kind AND ns = p_ns AND name >= v_lo AND name <= v_hi AND status = 'G'
         ORDER BY name, id
           FOR UPDATE;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    IF p_signal = 3 THEN
        OPEN held;
        adopt: LOOP
            FETCH held INTO v_name;
            IF v_found = 0 THEN
                LEAVE adopt;
            END IF;
            CALL {p}adopt_ident(p_kind, p_ns, v_name);
        END LOOP;
        CLOSE held;
        SET v_found = 1;
    END IF;
    IF p_limit > 0 THEN
        -- The instances to keep, the oldest: counted by a locking read in
        -- the index's order (read backwards, ORDER BY id DESC, the scan
        -- would lock the entry before the session's, another session's
        -- row: release_list_ns).
        SELECT COUNT(*) - p_limit INTO v_skip FROM {p}lock_requests FORCE INDEX (lock_requests_session)
         WHERE session_id = p_sess AND kind = p_kind AND ns = p_ns AND name >= v_lo AND name <= v_hi AND status = 'G'
           FOR UPDATE;
    END IF;
    OPEN mine;
    rel: LOOP
        FETCH mine INTO v_id, v_name, v_mode;
        IF v_found = 0 OR (p_limit > 0 AND v_n >= p_limit) THEN
            LEAVE rel;
        END IF;
        IF v_skip > 0 THEN
            SET v_skip = v_skip - 1;
            ITERATE rel;
        END IF;
        IF v_cur IS NOT NULL AND v_name <> v_cur THEN
            CALL {p}release_ident(p_kind, p_ns, v_cur, v_dr, v_dw, v_fast, v_idents, v_grants);
            SET v_dr = 0, v_dw = 0;
        END IF;
        SET v_cur = v_name;
        DELETE FROM {p}lock_requests WHERE id = v_id;
        IF v_mode = 'W' THEN
            SET v_dw = v_dw + 1;
        ELSE
            SET v_dr = v_dr + 1;
        END IF;
        IF v_id < 0 THEN
            SET v_fast = CONCAT_WS(',', NULLIF(v_fast, ''), v_id);
        END IF;
        SET v_n = v_n + 1;
    END LOOP;
    CLOSE mine;
    IF v_cur IS NOT NULL THEN
        CALL {p}release_ident(p_kind, p_ns, v_cur, v_dr, v_dw, v_fast, v_idents, v_grants);
        IF p_signal <> 0 AND p_limit > 0 THEN
            WHILE v_fast <> '' DO
                UPDATE {p}lock_fast FORCE INDEX (lock_fast_holder)
                   SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
                 WHERE h_id = CAST(SUBSTRING_INDEX(v_fast, ',', 1) AS SIGNED) AND slow = 1;
                SET v_fast = IF(LOCATE(',', v_fast) > 0, SUBSTRING(v_fast, LOCATE(',', v_fast) + 1), '');
            END WHILE;
        END IF;
        IF p_signal <> 0 THEN
            UPDATE {p}lock_fast FORCE INDEX (lock_fast_session)
               SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
             WHERE h_session = p_sess AND kind = p_kind AND ns = p_ns AND name >= v_lo AND name <= v_hi AND slow = 1
               AND (h_id IS NULL OR p_limit = 0);
        END IF;
    END IF;
    COMMIT;
    -- Then each identifier the release left free goes back to the fast
    -- path, as the client's demoteLocked would hand it back after the
    -- call (five round trips): in a transaction of its own, under its
    -- row lock, when nothing of it is left in InnoDB (fast_demote_check,
    -- fast_demote). A transaction whose only InnoDB work is a locking
    -- read writes no redo. A row locked by another transaction is
    -- skipped (something is under way on the identifier: the call does
    -- not wait for it), and a failure here is not the release's, which
    -- has committed: either leaves the identifier's free flag at 1, and
    -- the client hands it back after the call (releaseSlow). The flag
    -- becomes 2 once the call has handed it back.
    demote: BEGIN
        DECLARE v_i INT DEFAULT 0;
        DECLARE v_dname VARBINARY(256);
        DECLARE v_dfence BIGINT;
        DECLARE EXIT HANDLER FOR SQLEXCEPTION ROLLBACK;
        WHILE v_i < JSON_LENGTH(v_idents) DO
            -- JSON_UNQUOTE(JSON_EXTRACT()), not JSON_VALUE: MySQL has
            -- that only from 8.0.21.
            IF JSON_UNQUOTE(JSON_EXTRACT(v_idents, CONCAT('$[', v_i, '][4]'))) = '1' THEN
                SET v_dname = UNHEX(JSON_UNQUOTE(JSON_EXTRACT(v_idents, CONCAT('$[', v_i, '][0]')))), v_dfence = NULL;
                START TRANSACTION;
                SELECT li.fence INTO v_dfence FROM {p}lock_idents li
                 WHERE li.kind = p_kind AND li.ns = p_ns AND li.name = v_dname AND li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0 AND li.gated = 0
                   AND NOT EXISTS (SELECT 1 FROM {p}lock_requests r WHERE r.kind = li.kind AND r.ns = li.ns AND r.name = li.name)
                   FOR UPDATE SKIP LOCKED;
                IF v_dfence IS NOT NULL THEN
                    UPDATE {p}lock_fast
                       SET slow = 0, fence = GREATEST(fence, v_dfence), h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
                     WHERE kind = p_kind AND ns = p_ns AND name = v_dname AND slow = 1 AND h_id IS NULL;
                    SET v_idents = JSON_SET(v_idents, CONCAT('$[', v_i, '][4]'), 2);
                END IF;
                COMMIT;
            END IF;
            SET v_i = v_i + 1;
        END WHILE;
    END demote;
    SELECT v_n, v_idents, v_grants;
END;
-- end

DROP PROCEDURE IF EXISTS {p}release_commit;
-- statement
CREATE PROCEDURE {p}release_commit(IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_kind INT,
    IN p_ns VARBINARY(256), IN p_name VARBINARY(256), IN p_fast TINYINT)
MODIFIES SQL DATA
BEGIN
    CALL {p}release_instances(p_sess, p_kind, p_ns, p_name, IF(p_fast <> 0, 1, 0), 0);
END;
-- end
