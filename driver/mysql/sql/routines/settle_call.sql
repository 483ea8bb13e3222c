-- The undo of a lock call that may still run, in one call. A call whose client was cut off may have a statement still
-- running in the server; its undo locked the identifiers' rows first, in
-- the order every call locks them, so that such a statement (which
-- holds or waits for one of them) ends first, then read the call's
-- requests and withdrew them: the engine's transaction of about ten
-- statements. {p}settle_call does it in one call, so that this change to
-- the slow path's lock state, too, is no longer spread over a client's
-- round trips (the step before the lock state leaves InnoDB: a MEMORY
-- table's writes cannot be rolled back).
--
-- Arguments and answer as {p}withdraw_call. Each
-- identifier in turn, in order: {p}adopt_ident (the row
-- locked, made when missing so that a statement about to make it is
-- waited for too, the fast path stopped and its holder adopted). Then
-- {p}withdraw_call finds the call's requests under those locks and
-- hands each identifier on (a gated one too); the
-- call commits.
DROP PROCEDURE IF EXISTS {p}settle_call;
-- statement
CREATE PROCEDURE {p}settle_call(IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_call BIGINT, IN p_kind INT,
    IN p_ns VARBINARY(256), IN p_names LONGTEXT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_i INT DEFAULT 0;
    DECLARE v_name VARBINARY(256);
    WHILE v_i < JSON_LENGTH(p_names) DO
        SET v_name = UNHEX(JSON_UNQUOTE(JSON_EXTRACT(p_names, CONCAT('$[', v_i, ']'))));
        CALL {p}adopt_ident(p_kind, p_ns, v_name);
        SET v_i = v_i + 1;
    END WHILE;
    CALL {p}withdraw_call(p_sess, p_call, p_kind, p_ns, p_names);
    -- {p}withdraw_call commits what it withdrew; this ends the call's
    -- transaction when it found nothing.
    COMMIT;
END;
-- end
