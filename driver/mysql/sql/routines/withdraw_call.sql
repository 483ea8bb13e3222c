-- {p}withdraw_call is {p}remove_requests for the requests of one lock
-- call (p_sess, p_call) on names (a JSON array of hex names, sorted) of
-- kind p_kind and namespace p_ns, which it finds itself: the undo of a
-- call whose statements have all ended (so that its requests can no
-- longer change) had read them first through {p}lock_holds, a round trip
-- and about a fifth of a millisecond of the server's time more. Its
-- request rows by the session's index, its fast holders not adopted yet
-- by their rows (an adopted one is a request row under the same id, and
-- one found both ways is deleted once). Answers as {p}remove_requests.
DROP PROCEDURE IF EXISTS {p}withdraw_call;
-- statement
CREATE PROCEDURE {p}withdraw_call(IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_call BIGINT, IN p_kind INT,
    IN p_ns VARBINARY(256), IN p_names LONGTEXT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_i INT DEFAULT 0;
    DECLARE v_name VARBINARY(256);
    DECLARE v_found LONGTEXT;
    DECLARE v_hid BIGINT;
    DECLARE v_reqs LONGTEXT DEFAULT '[]';
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_hid = NULL;
    WHILE v_i < JSON_LENGTH(p_names) DO
        SET v_name = UNHEX(JSON_UNQUOTE(JSON_EXTRACT(p_names, CONCAT('$[', v_i, ']'))));
        -- Two reads, not one of their UNION (a temporary table).
        SELECT JSON_ARRAYAGG(JSON_ARRAY(r.id, p_kind, HEX(p_ns), HEX(v_name))) INTO v_found
          FROM {p}lock_requests r FORCE INDEX (lock_requests_session)
         WHERE r.session_id = p_sess AND r.kind = p_kind AND r.ns = p_ns AND r.name = v_name AND r.call_id = p_call;
        IF v_found IS NOT NULL THEN
            SET v_reqs = JSON_MERGE_PRESERVE(v_reqs, v_found);
        END IF;
        SET v_hid = NULL;
        SELECT f.h_id INTO v_hid FROM {p}lock_fast f
         WHERE f.kind = p_kind AND f.ns = p_ns AND f.name = v_name AND f.h_id IS NOT NULL
           AND f.h_session = p_sess AND f.h_call = p_call;
        IF v_hid IS NOT NULL THEN
            SET v_reqs = JSON_ARRAY_APPEND(v_reqs, '$', JSON_ARRAY(v_hid, p_kind, HEX(p_ns), HEX(v_name)));
        END IF;
        SET v_i = v_i + 1;
    END WHILE;
    IF JSON_LENGTH(v_reqs) = 0 THEN
        SELECT 0, '[]', '[]';
    ELSE
        CALL {p}remove_requests(v_reqs);
    END IF;
END;
-- end
