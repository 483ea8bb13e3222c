-- {p}grantable is lockcore's rule for one request (session, mode) given
-- the distinct sessions (comma-separated) with a granted writer or
-- reader and with an earlier waiting writer or reader: no other
-- session's conflicting instance, and the session holds one already or
-- no earlier waiter of another session conflicts.
DROP FUNCTION IF EXISTS {p}grantable;
-- statement
CREATE FUNCTION {p}grantable(p_sess VARCHAR(64) CHARACTER SET ascii, p_mode CHAR(1) CHARACTER SET ascii,
    p_gw TEXT CHARACTER SET ascii, p_gr TEXT CHARACTER SET ascii,
    p_ww TEXT CHARACTER SET ascii, p_wr TEXT CHARACTER SET ascii)
RETURNS TINYINT DETERMINISTIC NO SQL
BEGIN
    -- "Another session in set s": s is neither empty nor just p_sess.
    IF (p_gw <> '' AND p_gw <> p_sess) OR (p_mode = 'W' AND p_gr <> '' AND p_gr <> p_sess) THEN
        RETURN 0;
    END IF;
    IF FIND_IN_SET(p_sess, p_gw) > 0 OR FIND_IN_SET(p_sess, p_gr) > 0 THEN
        RETURN 1;
    END IF;
    IF (p_ww <> '' AND p_ww <> p_sess) OR (p_mode = 'W' AND p_wr <> '' AND p_wr <> p_sess) THEN
        RETURN 0;
    END IF;
    RETURN 1;
END;
-- end
