-- {p}gate_key is the advisory lock key of identifier (k, n, m)'s gate,
-- which a transaction holds while it holds a lock on it ({p}tx_gate).
-- statement
CREATE OR REPLACE FUNCTION {p}gate_key(k smallint, n bytea, m bytea) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT hashtextextended(k::text || ':' || encode(n, 'hex') || ':' || encode(m, 'hex'), 7809847782465536322)
$$;
-- end
