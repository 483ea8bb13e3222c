DROP PROCEDURE IF EXISTS {p}release_commit;
-- statement
CREATE PROCEDURE {p}release_commit(IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_kind INT,
    IN p_ns VARBINARY(256), IN p_name VARBINARY(256), IN p_fast TINYINT)
MODIFIES SQL DATA
BEGIN
    CALL {p}release_instances(p_sess, p_kind, p_ns, p_name, IF(p_fast <> 0, 1, 0), 0);
END;
-- end
