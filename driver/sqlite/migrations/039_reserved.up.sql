-- Intentionally empty: MySQL's migration 039 withdraws requests in one
-- procedure call. The number stays the same in every dialect.
SELECT 1;
