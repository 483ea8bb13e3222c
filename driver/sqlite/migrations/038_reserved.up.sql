-- Intentionally empty: MySQL's migration 038 makes every slow-path
-- release one procedure call. The number stays the same in every dialect.
SELECT 1;
