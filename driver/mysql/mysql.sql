-- MySQL/MariaDB's own queries: the ones no other dialect has, because they
-- use what only MySQL/MariaDB offers (the engine uses a query of this file only
-- where the dialect has it, or this driver's own code does). queries.sql
-- holds the queries every dialect has, under the same names
-- (driver/queries_test.go checks both rules).

-- name: ident_waiting
SELECT n_p FROM {p}lock_idents WHERE kind = ? AND ns = ? AND name = ?;

-- name: release_delete_ns
-- MariaDB only (DELETE ... RETURNING; MySQL 8 lacks it and uses
-- release_list_ns, then request_delete). The last argument is a row limit:
-- a huge one for all, since there is no LIMIT -1.
DELETE FROM {p}lock_requests
 WHERE session_id = ? AND kind = ? AND ns = ? AND status = 'G'
 ORDER BY id DESC LIMIT ?
RETURNING kind, ns, name, mode;

-- name: release_delete_name
-- MariaDB only, like release_delete_ns.
DELETE FROM {p}lock_requests
 WHERE session_id = ? AND kind = ? AND ns = ? AND name = ? AND status = 'G'
 ORDER BY id DESC LIMIT ?
RETURNING kind, ns, name, mode;

-- name: notify_insert
INSERT INTO {p}notifications (channel, payload, created_at) VALUES (?, ?, {now});

