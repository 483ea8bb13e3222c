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
