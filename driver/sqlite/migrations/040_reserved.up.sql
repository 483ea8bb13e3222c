-- Intentionally empty: MySQL's and PostgreSQL's migration 040 withdraw a
-- lock call that may still run in one call. The number stays the same in
-- every dialect.
SELECT 1;
