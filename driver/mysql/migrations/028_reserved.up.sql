-- Intentionally empty: SQLite's migration 028 stores an uncontended lock's
-- holder in the identifier's own row (PostgreSQL's migration 017, MySQL's
-- lock_fast). The number stays the same in every dialect.
SELECT 1;
