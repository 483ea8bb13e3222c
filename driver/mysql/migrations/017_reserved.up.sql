-- Intentionally empty: PostgreSQL's migration 017 (the inline lock holder)
-- is a change of its lock tables this backend does not have. The number
-- stays the same in every dialect.
SELECT 1;
