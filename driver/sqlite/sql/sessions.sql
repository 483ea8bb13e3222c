-- SQLite: the sessions slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds.
-- Transactions start with BEGIN IMMEDIATE, so the database is locked for
-- writing from the first statement: row locks are not needed.

-- name: session_insert
INSERT INTO {p}sessions (id, client_id, host, pid, name, created_at, expires_at, hostid)
VALUES (?1, ?2, ?3, ?4, ?5, {now}, {now} + ?6, ?7);

-- name: session_renew
-- Renew the named sessions ({list}, from the second argument on) whose
-- lease has not run out: an expired session is never revived.
UPDATE {p}sessions SET expires_at = {now} + ?1 WHERE expires_at > {now} AND id IN ({list});

-- name: session_list_by_client
SELECT id FROM {p}sessions WHERE client_id = ? AND expires_at > {now};

-- name: session_list
-- Every session, for monitoring.
SELECT id, client_id, host, pid, name, hostid, created_at, expires_at FROM {p}sessions ORDER BY created_at, id;

-- name: session_delete
DELETE FROM {p}sessions WHERE id = ?;

-- name: session_list_reapable
-- Sessions whose lease ran out, and sessions of processes on this host
-- (same boot, same PID namespace), whose PIDs the caller checks; never
-- the caller's own. Arguments: client id, host id, limit.
SELECT id, pid, expires_at < {now} FROM {p}sessions
 WHERE client_id <> ?1 AND (expires_at < {now} OR (hostid = ?2 AND hostid <> ''))
 ORDER BY expires_at LIMIT ?3;

-- name: session_named_live
-- Whether a session of this name has a lease that has not run out: the
-- job-event subscribers' presence (Sessions.SessionNamedLive).
SELECT COUNT(*) FROM {p}sessions WHERE name = ? AND expires_at > {now};
