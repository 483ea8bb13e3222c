-- Intentionally empty: PostgreSQL's migration 026 makes its contended
-- release and request leaner. The number stays the same in every dialect.
SELECT 1;
