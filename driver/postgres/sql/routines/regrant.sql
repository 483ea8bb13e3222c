-- {p}regrant is {p}regrant_grants answering the number of grants it made
-- instead of the grants.
-- statement
CREATE OR REPLACE FUNCTION {p}regrant(k smallint, n bytea, m bytea, channel text) RETURNS integer
LANGUAGE sql AS $$
    SELECT coalesce(cardinality(string_to_array(nullif({p}regrant_grants(k, n, m, channel), ''), ',')), 0)
$$;
-- end
