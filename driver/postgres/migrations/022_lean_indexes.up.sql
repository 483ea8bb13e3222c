-- Intentionally empty: SQLite's migration 022 trims the index pages its
-- claims and acknowledgements write (each page is a WAL frame there). The
-- number stays the same in every dialect.
SELECT 1;
