-- {p}ident_take takes an identifier's mutex (its row made when missing:
-- not INSERT IGNORE, see ident_ensure) and answers its gated flag and
-- its fence, the counters' row made at zero when missing, its fence at
-- the clock (a row made again starts above every token the old one
-- gave: ident_purge_idle removes only rows a second behind it).
DROP PROCEDURE IF EXISTS {p}ident_take;
-- statement
CREATE PROCEDURE {p}ident_take(IN p_kind INT, IN p_ns VARBINARY(256), IN p_name VARBINARY(256),
    OUT p_gated TINYINT, OUT p_fence BIGINT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_found INT DEFAULT 1;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    SET p_gated = NULL, p_fence = NULL;
    SELECT gated INTO p_gated FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
    IF v_found = 0 THEN
        INSERT INTO {p}lock_mutex (kind, ns, name, gated) VALUES (p_kind, p_ns, p_name, 0)
            ON DUPLICATE KEY UPDATE gated = gated;
        SET v_found = 1;
        SELECT gated INTO p_gated FROM {p}lock_mutex WHERE kind = p_kind AND ns = p_ns AND name = p_name FOR UPDATE;
    END IF;
    SELECT fence INTO p_fence FROM {p}lock_idents WHERE kind = p_kind AND ns = p_ns AND name = p_name;
    IF v_found = 0 THEN
        SET p_fence = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6));
        INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p) VALUES (p_kind, p_ns, p_name, p_fence, 0, 0, 0);
    END IF;
END;
-- end
