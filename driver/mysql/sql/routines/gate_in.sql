-- {p}gate_in adds a gate held in p_mode to the granted sessions' sets
-- {p}grantable reads (writers p_gw, readers p_gr) as the session '#gate',
-- which no session id can be (client.go's randomID makes them of hex
-- digits): another session's instance to every request.
DROP PROCEDURE IF EXISTS {p}gate_in;
-- statement
CREATE PROCEDURE {p}gate_in(IN p_mode CHAR(1) CHARACTER SET ascii, INOUT p_gw TEXT CHARACTER SET ascii,
    INOUT p_gr TEXT CHARACTER SET ascii)
NO SQL
BEGIN
    IF p_mode = 'W' THEN
        SET p_gw = CONCAT_WS(',', NULLIF(p_gw, ''), '#gate');
    ELSEIF p_mode = 'R' THEN
        SET p_gr = CONCAT_WS(',', NULLIF(p_gr, ''), '#gate');
    END IF;
END;
-- end
