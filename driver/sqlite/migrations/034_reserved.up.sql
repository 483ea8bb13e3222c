-- Intentionally empty: MySQL/MariaDB's migration 034 releases a
-- namespace and its turnstile in one call on the session's line. The
-- number stays the same in every dialect.
SELECT 1;
