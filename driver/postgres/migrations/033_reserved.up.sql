-- Intentionally empty: MySQL/MariaDB's migration 033 commits the slow
-- path's request in the call that makes it. The number stays the same in
-- every dialect.
SELECT 1;
