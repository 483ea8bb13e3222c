-- Intentionally empty: PostgreSQL's migration 036 keeps the lock state's
-- incarnation in the identifier's row. The number stays the same in every
-- dialect.
SELECT 1;
