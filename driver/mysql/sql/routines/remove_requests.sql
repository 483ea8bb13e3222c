-- {p}remove_requests withdraws requests nobody will wait for (an undone
-- call's, an ended session's, an orphan's) and hands their identifiers on,
-- in one call: p_reqs is a JSON array of [id, kind, hex namespace, hex
-- name]; each identifier's mutex is taken first, in identifier order, the
-- requests deleted (request rows and fast holders), and each identifier
-- handed on by {p}release_ident (a gated one too, the gate counted).
-- Answers one row: the requests deleted, the identifiers and the grants.
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
