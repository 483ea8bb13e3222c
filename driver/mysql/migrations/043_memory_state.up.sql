-- The slow path's lock state in MEMORY (migration 043). Migration 023
-- moved uncontended locks to a MEMORY table ({p}lock_fast); every other
-- change to the lock state (a waiter, a second instance, a gated name)
-- still wrote InnoDB rows, and InnoDB's own work for each row written
-- (undo, redo, row locks, the redo log's flush at commit) was most of a
-- slow-path call: docs/benchmarks.md, "Where a MariaDB slow-path call's
-- time goes". Since migrations 038 to 042 every such change is one
-- procedure call, which the server runs to its end even when its client
-- is gone, so the state can live where writes cannot be rolled back:
--
--   {p}lock_idents (now MEMORY) keeps each identifier's fence and
--     counters, {p}lock_requests (now MEMORY) the requests.
--   {p}lock_mutex (new, InnoDB) is the identifier's mutex: its row lock
--     (SELECT ... FOR UPDATE) serializes the slow path's calls on the
--     identifier as {p}lock_idents' row lock did, and it keeps the
--     identifier's gated flag (migration 020), which must outlive a
--     restart (the gate rows do). A transaction whose only InnoDB work is
--     locking reads writes no redo: a slow-path call no longer flushes.
--
-- Rules every statement on the lock state keeps (the procedures below,
-- mysql.sql and queries.sql):
--   1. A statement that reads or writes a MEMORY table never waits for an
--      InnoDB row lock: MEMORY tables are locked whole for the statement,
--      and a statement holding that lock while it waited for a row lock
--      would stall every other statement on the table behind a lock wait
--      no deadlock detector sees. Mutex rows are locked by statements of
--      their own; InnoDB tables appear beside MEMORY ones only in plain
--      reads (READ COMMITTED: no locks).
--   2. A call takes its identifiers' mutexes, in the identifiers' order,
--      before it changes their state. What a call may have written
--      before a later lock wait fails it (a deadlock victim) is state
--      that is whole by itself: a counters row made at zero, or a fast
--      holder adopted (a request row with its counters).
--   3. A restart empties the MEMORY tables: every session is lost (the
--      incarnation, migration 023), and the first session of the new
--      incarnation marks gated identifiers as the slow path's again and
--      starts request ids above every id handed out before
--      (incarnation_seed_requests), so that no client still waiting on
--      an old id can read a new request as its own.
--
-- The procedures that named {p}lock_idents' row lock or its gated column
-- are made again from their last versions (migrations 037, 038, 041,
-- 042) with only these changes: the lock is the mutex row's, the gated
-- flag read from it, and the fence from the counters' row (both rows
-- made by {p}ident_take when either is missing); {p}release_ident reads
-- gated from the mutex;
-- {p}regrant_call locks the mutex; {p}remove_requests' first pass takes
-- each identifier's mutex; {p}release_instances is migration 038's with
-- its identifiers' mutexes taken first, in name order, before it reads
-- the session's rows for writing (a namespace's names: every name where
-- the session has a request row or a fast holder to adopt, and only the
-- rows of names it locked are released), and its hand-back to the fast
-- path takes the mutex (SKIP LOCKED) before it reads the counters.
--
-- The move itself is idempotent ({p}m043_move): gated copied to the
-- mutex rows and dropped, then each table converted once, with B-tree
-- indexes (MEMORY's default is a hash, which cannot scan a range). It
-- copies the rows as they are; a transaction lock taken while it runs
-- (Client.LockTx, whose gated flag it may miss) is the one thing it does
-- not serialize with: upgrade with transaction locks idle.
SET SESSION max_heap_table_size = 1073741824;

CREATE TABLE IF NOT EXISTS {p}lock_mutex (
    kind  INT            NOT NULL,
    ns    VARBINARY(256) NOT NULL,
    name  VARBINARY(256) NOT NULL,
    gated TINYINT        NOT NULL DEFAULT 0,
    PRIMARY KEY (kind, ns, name)
) ENGINE=InnoDB;

DROP PROCEDURE IF EXISTS {p}m043_move;
-- statement
CREATE PROCEDURE {p}m043_move()
MODIFIES SQL DATA
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.COLUMNS
                WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{p}lock_idents' AND COLUMN_NAME = 'gated') THEN
        INSERT INTO {p}lock_mutex (kind, ns, name, gated)
        SELECT kind, ns, name, gated FROM {p}lock_idents
            ON DUPLICATE KEY UPDATE gated = GREATEST({p}lock_mutex.gated, VALUES(gated));
        ALTER TABLE {p}lock_idents DROP COLUMN gated;
    END IF;
    IF EXISTS (SELECT 1 FROM information_schema.TABLES
                WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{p}lock_idents' AND ENGINE <> 'MEMORY') THEN
        ALTER TABLE {p}lock_idents DROP PRIMARY KEY, ADD PRIMARY KEY USING BTREE (kind, ns, name), ENGINE=MEMORY;
    END IF;
    IF EXISTS (SELECT 1 FROM information_schema.TABLES
                WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{p}lock_requests' AND ENGINE <> 'MEMORY') THEN
        ALTER TABLE {p}lock_requests
            DROP INDEX lock_requests_ident, DROP INDEX lock_requests_session, DROP INDEX lock_requests_pending,
            DROP PRIMARY KEY,
            ADD PRIMARY KEY USING BTREE (id),
            ADD KEY lock_requests_ident USING BTREE (kind, ns, name, id),
            ADD KEY lock_requests_session USING BTREE (session_id, kind, ns, name),
            ADD KEY lock_requests_pending USING BTREE (status, kind, ns, name),
            ENGINE=MEMORY;
    END IF;
END;
-- end

CALL {p}m043_move();

DROP PROCEDURE IF EXISTS {p}m043_move;

-- {p}ident_take takes an identifier's mutex (its row made when missing:
-- not INSERT IGNORE, see ident_ensure) and answers its gated flag and
-- its fence, the counters' row made at zero when missing, its fence at
-- the clock (a row made again starts above every token the old one
-- gave: ident_purge_idle removes only rows a second behind it).
DROP PROCEDURE IF EXISTS {p}ident_take;
-- statement
CREATE PROCEDURE {p}ident_take(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256),
    OUT p_gated TINYINT, OUT p_fence BIGINT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_found INT DEFAULT 1;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    SET p_gated = NULL, p_fence = NULL;
    SELECT gated INTO p_gated FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
    IF v_found = 0 THEN
        INSERT INTO {p}lock_mutex (kind, ns, name, gated) VALUES (p_kind, p_ns, p_name, 0)
            ON DUPLICATE KEY UPDATE gated = gated;
        SET v_found = 1;
        SELECT gated INTO p_gated FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
    END IF;
    SELECT fence INTO p_fence FROM {p}lock_idents WHERE kind = p_kind AND ns = p_ns AND name = p_name;
    IF v_found = 0 THEN
        SET p_fence = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6));
        INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p) VALUES (p_kind, p_ns, p_name, p_fence, 0, 0, 0);
    END IF;
END;
-- end

-- {p}ident_read is ident_lock (the engine's transaction): the mutex
-- taken as {p}ident_take takes it, and one row: fence, counters, gated.
DROP PROCEDURE IF EXISTS {p}ident_read;
-- statement
CREATE PROCEDURE {p}ident_read(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256))
MODIFIES SQL DATA
BEGIN
    DECLARE v_gated TINYINT;
    DECLARE v_fence BIGINT;
    CALL {p}ident_take(p_kind, p_ns, p_name, v_gated, v_fence);
    SELECT fence, n_r, n_w, n_p, v_gated FROM {p}lock_idents WHERE kind = p_kind AND ns = p_ns AND name = p_name;
END;
-- end

-- {p}purge_ident deletes one idle identifier (ident_purge_idle, in the
-- caller's transaction): under its mutex (skipped when another holds
-- it), its counters' row when nothing holds, waits for or gates it, the
-- fast path owns it and its fence is a second behind the clock; then the
-- mutex row, when no counters' row is left (a restart leaves mutex rows
-- without one). One row: 1 when the mutex row went, 0 otherwise.
DROP PROCEDURE IF EXISTS {p}purge_ident;
-- statement
CREATE PROCEDURE {p}purge_ident(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256))
MODIFIES SQL DATA
BEGIN
    DECLARE v_one INT DEFAULT NULL;
    DECLARE v_n INT DEFAULT 0;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_one = NULL;
    SELECT 1 INTO v_one FROM {p}lock_mutex
     WHERE kind = p_kind AND ns = p_ns AND name = p_name AND gated = 0 FOR UPDATE SKIP LOCKED;
    IF v_one IS NOT NULL THEN
        DELETE FROM {p}lock_idents
         WHERE kind = p_kind AND ns = p_ns AND name = p_name AND n_r = 0 AND n_w = 0 AND n_p = 0
           AND fence < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 1000000
           AND NOT EXISTS (SELECT 1 FROM {p}lock_requests r WHERE r.kind = p_kind AND r.ns = p_ns AND r.name = p_name)
           AND NOT EXISTS (SELECT 1 FROM {p}lock_fast f WHERE f.kind = p_kind AND f.ns = p_ns AND f.name = p_name AND f.slow = 1);
        IF NOT EXISTS (SELECT 1 FROM {p}lock_idents WHERE kind = p_kind AND ns = p_ns AND name = p_name) THEN
            DELETE FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = p_name;
            SET v_n = ROW_COUNT();
        END IF;
    END IF;
    SELECT v_n;
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

DROP PROCEDURE IF EXISTS {p}request_commit;
-- statement
CREATE PROCEDURE {p}request_commit(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256),
    IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_client VARCHAR(64) CHARACTER SET ascii,
    IN p_mode CHAR(1) CHARACTER SET ascii, IN p_call BIGINT, IN p_try TINYINT, IN p_inc BIGINT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_join TINYINT DEFAULT 0;
    DECLARE v_fence BIGINT;
    DECLARE v_id BIGINT;
    IF p_mode = 'R' THEN
        join_readers: BEGIN
            DECLARE v_gated TINYINT;
            DECLARE v_ffence BIGINT;
            DECLARE v_readers BIGINT;
            DECLARE v_now BIGINT;
            DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_join = 0;
            SELECT gated INTO v_gated FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
            SELECT fence INTO v_fence FROM {p}lock_idents WHERE kind = p_kind AND ns = p_ns AND name = p_name;
            IF v_fence IS NULL OR v_gated IS NULL OR v_gated <> 0 THEN
                LEAVE join_readers;
            END IF;
            SELECT fence INTO v_ffence FROM {p}lock_fast
             WHERE kind = p_kind AND ns = p_ns AND name = p_name AND slow = 1 AND h_id IS NULL;
            IF v_ffence IS NULL THEN
                LEAVE join_readers;
            END IF;
            SET v_now = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6));
            SELECT COUNT(*), COALESCE(SUM(mode = 'W' OR status <> 'G'), 0) = 0
                   AND (p_inc IS NOT NULL OR EXISTS (SELECT 1 FROM {p}sessions s
                                                      WHERE s.id = p_sess AND s.client_id = p_client AND s.expires_at > v_now
                                                        AND s.incarnation = (SELECT id FROM {p}incarnation)))
                   AND (p_inc IS NULL OR p_inc = 0 OR EXISTS (SELECT 1 FROM {p}incarnation WHERE id = p_inc))
              INTO v_readers, v_join
              FROM {p}lock_requests FORCE INDEX (lock_requests_ident)
             WHERE kind = p_kind AND ns = p_ns AND name = p_name;
            IF v_join THEN
                SET v_fence = GREATEST(v_fence, v_ffence) + 1;
                INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
                VALUES (p_sess, p_client, p_kind, p_ns, p_name, 'R', 'G', p_call, v_fence, v_now, v_now);
                SET v_id = LAST_INSERT_ID();
                UPDATE {p}lock_idents SET fence = v_fence, n_r = v_readers + 1, n_w = 0, n_p = 0
                 WHERE kind = p_kind AND ns = p_ns AND name = p_name;
            END IF;
        END join_readers;
    END IF;
    IF v_join THEN
        COMMIT;
        SELECT 'G', v_id, v_fence, 0;
    ELSE
        CALL {p}request(p_kind, p_ns, p_name, p_sess, p_client, p_mode, p_call, p_try, p_inc);
        COMMIT;
    END IF;
END;
-- end

DROP PROCEDURE IF EXISTS {p}request_reentry;
-- statement
CREATE PROCEDURE {p}request_reentry(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256),
    IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_client VARCHAR(64) CHARACTER SET ascii,
    IN p_mode CHAR(1) CHARACTER SET ascii, IN p_call BIGINT, IN p_try TINYINT, IN p_inc BIGINT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_join TINYINT DEFAULT 0;
    DECLARE v_fence BIGINT;
    DECLARE v_id BIGINT;
    DECLARE v_adopted BIGINT DEFAULT 0;
    reenter: BEGIN
        DECLARE v_found INT DEFAULT 1;
        DECLARE v_ffence BIGINT;
        DECLARE v_slow TINYINT;
        DECLARE v_cover TINYINT DEFAULT 0;
        DECLARE v_conflict TINYINT DEFAULT 0;
        DECLARE v_rcover TINYINT;
        DECLARE v_rconflict TINYINT;
        DECLARE v_gated TINYINT;
        DECLARE v_hid BIGINT;
        DECLARE v_hcall BIGINT;
        DECLARE v_hat BIGINT;
        DECLARE v_hsess VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
        DECLARE v_hclient VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
        DECLARE v_hmode CHAR(1) CHARACTER SET ascii COLLATE ascii_bin;
        DECLARE v_dr BIGINT DEFAULT 0;
        DECLARE v_dw BIGINT DEFAULT 0;
        DECLARE v_now BIGINT;
        DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
        SELECT gated INTO v_gated FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
        SELECT fence INTO v_fence FROM {p}lock_idents WHERE kind = p_kind AND ns = p_ns AND name = p_name;
        IF v_found = 0 THEN
            -- The rows made when missing (a name only the fast path has
            -- held).
            CALL {p}ident_take(p_kind, p_ns, p_name, v_gated, v_fence);
            SET v_found = 1;
        END IF;
        IF v_gated <> 0 THEN
            LEAVE reenter;
        END IF;
        -- The session's covering instance, and another session's
        -- conflicting one (lockcore's rule looks at that first: a state
        -- no call makes, but the rule's), in the fast holder and in the
        -- granted request rows.
        SELECT fence, slow, h_id, h_session, h_client, h_mode, h_call, h_at,
               COALESCE(h_id IS NOT NULL AND h_session = p_sess AND (h_mode = 'W' OR p_mode = 'R'), 0),
               COALESCE(h_id IS NOT NULL AND h_session <> p_sess AND (h_mode = 'W' OR p_mode = 'W'), 0)
          INTO v_ffence, v_slow, v_hid, v_hsess, v_hclient, v_hmode, v_hcall, v_hat, v_cover, v_conflict
          FROM {p}lock_fast WHERE kind = p_kind AND ns = p_ns AND name = p_name;
        IF v_found = 0 OR v_conflict <> 0 THEN
            LEAVE reenter;
        END IF;
        SELECT COALESCE(SUM(session_id = p_sess AND (mode = 'W' OR p_mode = 'R')), 0) > 0,
               COALESCE(SUM(session_id <> p_sess AND (mode = 'W' OR p_mode = 'W')), 0) > 0
          INTO v_rcover, v_rconflict
          FROM {p}lock_requests FORCE INDEX (lock_requests_ident)
         WHERE kind = p_kind AND ns = p_ns AND name = p_name AND status = 'G';
        SET v_now = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6));
        IF (v_cover = 0 AND v_rcover = 0) OR v_rconflict <> 0
           OR (p_inc IS NULL AND NOT EXISTS (SELECT 1 FROM {p}sessions s
                                              WHERE s.id = p_sess AND s.client_id = p_client AND s.expires_at > v_now
                                                AND s.incarnation = (SELECT id FROM {p}incarnation)))
           OR (p_inc <> 0 AND NOT EXISTS (SELECT 1 FROM {p}incarnation WHERE id = p_inc)) THEN
            LEAVE reenter;
        END IF;
        -- The fast holder adopted, as {p}adopt_ident adopts it: the slow
        -- path made the identifier's owner, the holder a request row
        -- under its own id (once) with the fast row's fence as its token,
        -- counted.
        IF v_slow = 0 THEN
            UPDATE {p}lock_fast SET slow = 1 WHERE kind = p_kind AND ns = p_ns AND name = p_name;
        END IF;
        IF v_hid IS NOT NULL THEN
            INSERT IGNORE INTO {p}lock_requests (id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
            VALUES (v_hid, v_hsess, v_hclient, p_kind, p_ns, p_name, v_hmode, 'G', v_hcall, v_ffence, v_hat, v_hat);
            IF ROW_COUNT() = 1 THEN
                SET v_dr = (v_hmode = 'R'), v_dw = (v_hmode = 'W');
            END IF;
            SET v_adopted = v_hid;
        END IF;
        SET v_fence = GREATEST(v_fence, v_ffence) + 1;
        INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
        VALUES (p_sess, p_client, p_kind, p_ns, p_name, p_mode, 'G', p_call, v_fence, v_now, v_now);
        SET v_id = LAST_INSERT_ID();
        UPDATE {p}lock_idents SET fence = v_fence, n_r = n_r + v_dr + (p_mode = 'R'), n_w = n_w + v_dw + (p_mode = 'W')
         WHERE kind = p_kind AND ns = p_ns AND name = p_name;
        SET v_join = 1;
    END reenter;
    IF v_join THEN
        COMMIT;
        SELECT 'G', v_id, v_fence, v_adopted;
    ELSE
        CALL {p}request_commit(p_kind, p_ns, p_name, p_sess, p_client, p_mode, p_call, p_try, p_inc);
    END IF;
END;
-- end

DROP PROCEDURE IF EXISTS {p}adopt_ident;
-- statement
CREATE PROCEDURE {p}adopt_ident(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256))
MODIFIES SQL DATA
BEGIN
    DECLARE v_found INT DEFAULT 1;
    DECLARE v_changed TINYINT DEFAULT 0;
    DECLARE v_gated TINYINT;
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
    SELECT gated INTO v_gated FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
    SELECT fence, n_r, n_w INTO v_fence, v_nr, v_nw FROM {p}lock_idents
     WHERE kind = p_kind AND ns = p_ns AND name = p_name;
    IF v_found = 0 THEN
        CALL {p}ident_take(p_kind, p_ns, p_name, v_gated, v_fence);
        SET v_found = 1;
        SELECT fence, n_r, n_w INTO v_fence, v_nr, v_nw FROM {p}lock_idents
         WHERE kind = p_kind AND ns = p_ns AND name = p_name;
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
    DECLARE v_fence BIGINT;
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
    -- Pass 1 takes each identifier's mutex (made when missing: not gated),
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
                        SELECT gated INTO v_gated FROM {p}lock_mutex
                         WHERE kind = v_kind AND ns = v_ns AND name = v_name FOR UPDATE;
                        IF v_found = 0 THEN
                            CALL {p}ident_take(v_kind, v_ns, v_name, v_gated, v_fence);
                        END IF;
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
                    -- Only a row of the identifier whose mutex the call
                    -- holds.
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
    -- The deleted holders' fast rows (fast_clear_ids), last.
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
        SELECT gated INTO v_gated FROM {p}lock_mutex
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
    DECLARE v_held TINYINT;
    DECLARE v_one INT;
    DECLARE v_locked LONGTEXT CHARACTER SET ascii DEFAULT '';
    DECLARE scope CURSOR FOR
        SELECT x.name, MAX(x.held) FROM (
            SELECT name, 0 AS held FROM {p}lock_requests FORCE INDEX (lock_requests_session)
             WHERE session_id = p_sess AND kind = p_kind AND ns = p_ns
            UNION ALL
            SELECT name, 1 FROM {p}lock_fast
             WHERE p_signal = 3 AND h_session = p_sess AND kind = p_kind AND ns = p_ns AND slow = 1 AND h_id IS NOT NULL) x
         GROUP BY x.name ORDER BY x.name;
    DECLARE mine CURSOR FOR
        SELECT id, name, mode FROM {p}lock_requests FORCE INDEX (lock_requests_session)
         WHERE session_id = p_sess AND kind = p_kind AND ns = p_ns AND name >= v_lo AND name <= v_hi AND status = 'G'
           AND (p_name IS NOT NULL OR FIND_IN_SET(HEX(name), v_locked) > 0)
         ORDER BY name, id;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    -- Every identifier's mutex of the scope taken first, in name order,
    -- before any of the session's rows is read for writing, as every
    -- other slow-path call takes them: one name directly; a namespace's
    -- names where the session has a request row (one waiting now may be
    -- granted before the rows are read) or (signal 3) a fast holder not
    -- adopted yet, which is adopted under the mutex ({p}adopt_ident,
    -- which makes a missing row). Only the rows of names whose mutex the
    -- call holds (v_locked) are released.
    IF p_name IS NOT NULL AND p_signal = 3 THEN
        CALL {p}adopt_ident(p_kind, p_ns, p_name);
    ELSEIF p_name IS NOT NULL THEN
        SELECT 1 INTO v_one FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
        SET v_found = 1;
    ELSE
        OPEN scope;
        lock_scope: LOOP
            FETCH scope INTO v_name, v_held;
            IF v_found = 0 THEN
                LEAVE lock_scope;
            END IF;
            IF v_held = 1 THEN
                CALL {p}adopt_ident(p_kind, p_ns, v_name);
            ELSE
                SELECT 1 INTO v_one FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = v_name FOR UPDATE;
                SET v_found = 1;
            END IF;
            SET v_locked = CONCAT_WS(',', NULLIF(v_locked, ''), HEX(v_name));
        END LOOP;
        CLOSE scope;
        SET v_found = 1;
    END IF;
    IF p_limit > 0 THEN
        -- The instances to keep, the oldest: counted in the index's order
        -- (the rows cannot change under the name's mutex).
        SELECT COUNT(*) - p_limit INTO v_skip FROM {p}lock_requests FORCE INDEX (lock_requests_session)
         WHERE session_id = p_sess AND kind = p_kind AND ns = p_ns AND name >= v_lo AND name <= v_hi AND status = 'G';
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
    -- mutex, when nothing of it is left to the slow path
    -- (fast_demote_check, fast_demote). A transaction whose only InnoDB
    -- work is a locking read writes no redo. A mutex another holds is
    -- skipped (something is under way on the identifier: the call does
    -- not wait for it), and a failure here is not the release's, which
    -- has committed: either leaves the identifier's free flag at 1, and
    -- the client hands it back after the call (releaseSlow). The flag
    -- becomes 2 once the call has handed it back.
    demote: BEGIN
        DECLARE v_i INT DEFAULT 0;
        DECLARE v_dname VARBINARY(256);
        DECLARE v_dfence BIGINT;
        DECLARE v_free TINYINT;
        DECLARE EXIT HANDLER FOR SQLEXCEPTION ROLLBACK;
        WHILE v_i < JSON_LENGTH(v_idents) DO
            -- JSON_UNQUOTE(JSON_EXTRACT()), not JSON_VALUE: MySQL has
            -- that only from 8.0.21.
            IF JSON_UNQUOTE(JSON_EXTRACT(v_idents, CONCAT('$[', v_i, '][4]'))) = '1' THEN
                SET v_dname = UNHEX(JSON_UNQUOTE(JSON_EXTRACT(v_idents, CONCAT('$[', v_i, '][0]')))), v_dfence = NULL, v_free = NULL;
                START TRANSACTION;
                SELECT 1 INTO v_free FROM {p}lock_mutex
                 WHERE kind = p_kind AND ns = p_ns AND name = v_dname AND gated = 0
                   FOR UPDATE SKIP LOCKED;
                IF v_free IS NOT NULL THEN
                    SELECT li.fence INTO v_dfence FROM {p}lock_idents li
                     WHERE li.kind = p_kind AND li.ns = p_ns AND li.name = v_dname AND li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0
                       AND NOT EXISTS (SELECT 1 FROM {p}lock_requests r WHERE r.kind = li.kind AND r.ns = li.ns AND r.name = li.name);
                END IF;
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
