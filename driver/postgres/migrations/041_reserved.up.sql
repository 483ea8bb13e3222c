-- Intentionally empty: MySQL's migration 041 decides gated identifiers
-- in its slow-path calls. The number stays the same in every dialect.
SELECT 1;
