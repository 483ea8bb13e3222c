-- Intentionally empty: MySQL's migration 042 grants a re-entry in a
-- few statements. The number stays the same in every dialect.
SELECT 1;
