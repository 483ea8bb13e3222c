-- Intentionally empty: MySQL's migration 043 releases one instance of a
-- re-entered name in a few statements. The number stays the same in
-- every dialect.
SELECT 1;
