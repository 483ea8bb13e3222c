-- The slow path's request and its commit in one call (migration 033):
-- {p}request (migration 024) holds the identifier's row lock from its
-- first statement until the transaction ends, and the client's COMMIT
-- after the call was one more round trip with the lock held (readers
-- beside readers queued on it: docs/benchmarks.md). A call that fails
-- leaves its transaction open, for the client to roll back. Clients of
-- before this migration call {p}request and commit themselves.

DROP PROCEDURE IF EXISTS {p}request_commit;
-- statement
CREATE PROCEDURE {p}request_commit(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256),
    IN p_sess VARCHAR(64) CHARACTER SET ascii, IN p_client VARCHAR(64) CHARACTER SET ascii,
    IN p_mode CHAR(1) CHARACTER SET ascii, IN p_call BIGINT, IN p_try TINYINT, IN p_inc BIGINT)
MODIFIES SQL DATA
BEGIN
    CALL {p}request(p_kind, p_ns, p_name, p_sess, p_client, p_mode, p_call, p_try, p_inc);
    COMMIT;
END;
-- end
