-- {p}ident_read is ident_lock (the engine's transaction): the mutex
-- taken as {p}ident_take takes it, and one row: fence, counters, gated.
DROP PROCEDURE IF EXISTS {p}ident_read;
-- statement
CREATE PROCEDURE {p}ident_read(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256))
MODIFIES SQL DATA
BEGIN
    DECLARE v_gated TINYINT;
    DECLARE v_fence BIGINT;
    CALL {p}ident_take(p_kind, p_ns, p_name, v_gated, v_fence);
    SELECT fence, n_r, n_w, n_p, v_gated FROM {p}lock_idents WHERE kind = p_kind AND ns = p_ns AND name = p_name;
END;
-- end
