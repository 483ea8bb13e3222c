-- Intentionally empty: PostgreSQL's migration 025 makes its release
-- return the grants it made. The number stays the same in every dialect.
SELECT 1;
