-- Intentionally empty: PostgreSQL's and MySQL's migration 029 record the
-- contenders waiting behind a turnstile for monitoring; SQLite has no
-- turnstiles. The number stays the same in every dialect.
SELECT 1;
