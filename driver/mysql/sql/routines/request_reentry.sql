-- {p}request_reentry grants a re-entry in a few statements. A session
-- that holds an identifier in a mode that covers its new request
-- (anything under a write lock, a read under a read lock) is granted
-- another instance at once, whatever else holds or waits there (DESIGN:
-- re-entrant locks; lockcore's rule grants it before it looks at the
-- waiters, and a gate that a transaction holds cannot conflict with it:
-- the instance held excludes it). By the whole rule ({p}request) that was
-- about a dozen statements, most of a re-entry's cost on MariaDB.
--
-- It is {p}request_commit (same arguments and answer) for a request the
-- client believes its session's instances cover
-- (driver.RequestParams.Covered, the engine's record of the session's
-- grants; a hint: the procedure looks). Under the identifier's mutex (the
-- row made when missing: a name only the fast path has held), one read of
-- the fast row and one of the identifier's granted request rows find the
-- session's covering instance and any other session's conflicting one,
-- which the rule looks at first (a state no call makes, but the rule's).
-- With a covering instance and no such conflict, the identifier not gated
-- (a gate is {p}request's to count) and the session live as {p}request
-- checks it, the fast holder is adopted as {p}adopt_ident adopts it (two
-- statements here: the fast path stopped, the holder copied; its id is
-- answered, for the client to mark it adopted, as {p}request's is), the
-- new instance is a request row with the next fence and the counters
-- count both. Otherwise {p}request_commit decides. A request without the
-- hint never pays for the look.
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
