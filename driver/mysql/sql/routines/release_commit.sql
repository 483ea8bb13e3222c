-- {p}release_commit is {p}release_instances without a limit, with the
-- parameters and result of its callers: it releases every instance the
-- session holds of one name (p_name) or of a namespace (p_name NULL),
-- hands each identifier on ({p}release_ident, in name order: the
-- canonical order of every multi-identifier operation), clears the fast
-- rows of the released holders the slow path had taken over, commits, and
-- returns one row: the instances released, the identifiers and the
-- grants.
DROP PROCEDURE IF EXISTS {p}release_commit;
-- statement
CREATE PROCEDURE {p}release_commit(IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_kind INT,
    IN p_ns VARBINARY(256), IN p_name VARBINARY(256), IN p_fast TINYINT)
MODIFIES SQL DATA
BEGIN
    CALL {p}release_instances(p_sess, p_kind, p_ns, p_name, IF(p_fast <> 0, 1, 0), 0);
END;
-- end
