-- Intentionally empty: MySQL's migration 031 takes a turnstile and its
-- lock, and releases both, in one call each. The number stays the same in
-- every dialect.
SELECT 1;
