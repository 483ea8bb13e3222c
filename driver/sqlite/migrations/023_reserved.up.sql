-- Intentionally empty: MySQL's migration 023 moves uncontended lock state
-- into a MEMORY table (no redo-log flush per commit). This backend needs
-- no such change. The number stays the same in every dialect.
SELECT 1;
