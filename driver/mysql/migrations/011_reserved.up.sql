-- Intentionally empty: PostgreSQL's migration 011 is a change this backend does
-- not need. It keeps every dialect's migration numbers the same from 014 on,
-- so that one number names one change everywhere.
SELECT 1;
