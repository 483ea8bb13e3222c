-- Intentionally empty: PostgreSQL's migration 018 (the lock request in one call)
-- is a change of its lock tables this backend does not have. The number
-- stays the same in every dialect.
SELECT 1;
