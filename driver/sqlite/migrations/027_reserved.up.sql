-- Intentionally empty: PostgreSQL's migration 027 adds turnstiles, waits
-- inside the server for contended write locks. The number stays the same
-- in every dialect.
SELECT 1;
