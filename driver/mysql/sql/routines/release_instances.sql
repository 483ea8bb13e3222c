-- {p}release_instances releases the session's instances of one name
-- (p_name) or of a namespace (p_name NULL), hands each identifier on
-- ({p}release_ident, in name order), commits, and returns one row: the
-- instances released, the identifiers and the grants (release_call in
-- mysql.sql; fastlocks.go's parseReleaseCall reads them). Every slow-path
-- release is this one call: a MEMORY table's writes cannot be rolled
-- back, so they must not be spread over a client's round trips.
--
-- The identifiers' mutexes are taken first, in name order, before the
-- session's rows are read for writing (a namespace's names: every name
-- where the session has a request row or a fast holder to adopt, and only
-- the rows of names it locked are released). p_signal is what
-- fast_release_* saw of the session's fast holders the slow path took
-- over: 3 some perhaps not adopted yet, which are adopted first
-- ({p}adopt_ident, in name order); 1 adopted ones only; 0 none (no fast
-- row names the session's instances, and none is cleared). p_limit 0
-- releases every instance; otherwise, with a name (as
-- driver.FastReleaseParams' Limit), the newest p_limit (by id, as
-- sqldriver.ReleaseTaken takes them: the last ones in the index's order).
-- The fast rows of released holders are cleared last, after every other
-- write: when every instance went, all of the session's rows the slow
-- path owns in the scope; otherwise those of the released ids (as
-- fast_clear_ids) and the rows whose holders are marked adopted (h_id
-- NULL: fast_adopted), whose h_session only told the release to come
-- here. The hand-back to the fast path takes the mutex (SKIP LOCKED)
-- before it reads the counters.
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
