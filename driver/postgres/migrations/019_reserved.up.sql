-- Intentionally empty: SQLite's migration 019 (finishing a message in one
-- statement, by a trigger) is a change this backend does not need. The
-- number stays the same in every dialect.
SELECT 1;
