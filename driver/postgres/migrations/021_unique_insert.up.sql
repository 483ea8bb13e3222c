-- Intentionally empty: on PostgreSQL message_insert_unique is one
-- statement already (a data-modifying CTE); SQLite needs triggers and
-- MySQL a procedure for the same. The number stays the same in every
-- dialect.
SELECT 1;
