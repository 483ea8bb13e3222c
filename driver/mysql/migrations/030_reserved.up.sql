-- Intentionally empty: SQLite's migration 030 records the contenders
-- waiting behind its turnstiles (in the process) for monitoring, as this
-- dialect's migration 029 does. The number stays the same in every
-- dialect.
SELECT 1;
