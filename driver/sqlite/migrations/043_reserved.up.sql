-- Intentionally empty: MySQL's migration 043 makes its release call lock
-- identifiers first. The number stays the same in every dialect.
SELECT 1;
