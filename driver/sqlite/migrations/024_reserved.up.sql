-- Intentionally empty: MySQL's migration 024 adds its one-call request
-- and regrant procedures (PostgreSQL has had baton_request and
-- baton_regrant since migrations 017 and 018). The number stays the same
-- in every dialect.
SELECT 1;
