-- Intentionally empty: PostgreSQL's migration 032 waits behind a
-- turnstile without a subtransaction. The number stays the same in every
-- dialect.
SELECT 1;
