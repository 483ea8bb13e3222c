-- Intentionally empty: MySQL's migration 037 grants a reader beside other
-- readers in a few statements. The number stays the same in every dialect.
SELECT 1;
