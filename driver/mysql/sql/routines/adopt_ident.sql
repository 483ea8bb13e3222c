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
