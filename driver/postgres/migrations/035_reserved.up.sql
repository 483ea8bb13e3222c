-- Intentionally empty: MySQL/MariaDB's migration 035 releases through its
-- lock table and hands the identifiers on in one call. The number stays
-- the same in every dialect.
SELECT 1;
