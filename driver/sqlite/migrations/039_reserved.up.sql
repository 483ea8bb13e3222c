-- Intentionally empty: MySQL's and PostgreSQL's migration 039 withdraw
-- requests in one call. The number stays the same in every dialect.
SELECT 1;
