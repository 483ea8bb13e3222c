-- Intentionally empty: MySQL's migration 043 moves the slow path's lock
-- state to MEMORY tables. The number stays the same in every dialect.
SELECT 1;
