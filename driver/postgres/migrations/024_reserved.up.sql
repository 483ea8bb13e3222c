-- Intentionally empty: MySQL's migration 024 adds its one-call request
-- procedure (PostgreSQL has had baton_request since migration 018). The
-- number stays the same in every dialect.
SELECT 1;
