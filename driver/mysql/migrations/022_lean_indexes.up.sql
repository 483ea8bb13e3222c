-- Intentionally empty: SQLite's and PostgreSQL's migration 022 make the
-- due index partial and drop the claims index, so that a claim writes
-- fewer index entries. MySQL has no partial indexes, and InnoDB already
-- updates only the secondary indexes whose columns change. The number
-- stays the same in every dialect.
SELECT 1;
