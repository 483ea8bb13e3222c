-- MySQL/MariaDB: the sessions slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds
-- (database clock). Bind variables are positional "?" only: a value
-- used twice is passed twice. Transactions run at READ COMMITTED (set
-- per connection): locking reads and writes see the latest committed
-- rows, and every plain read sees what was committed when it started.

-- name: session_insert
-- The session belongs to the lock state's incarnation (migration 023);
-- -1 when there is none yet: such a session is never renewed.
INSERT INTO {p}sessions (id, client_id, host, pid, name, created_at, expires_at, hostid, incarnation)
VALUES (?, ?, ?, ?, ?, {now}, {now} + ?, ?, COALESCE((SELECT id FROM {p}incarnation), -1));

-- name: session_renew
-- Renew the named sessions ({list}, from the second argument on) whose
-- lease has not run out: an expired session is never revived, nor one of
-- a lock state a restart emptied (migration 023).
UPDATE {p}sessions SET expires_at = {now} + ?
 WHERE expires_at > {now} AND incarnation = (SELECT id FROM {p}incarnation) AND id IN ({list});

-- name: session_list_by_client
-- Only sessions of the lock state's incarnation (migration 023): one from
-- before a restart may count itself the holder of a lock the restart
-- emptied.
SELECT id FROM {p}sessions
 WHERE client_id = ? AND expires_at > {now} AND incarnation = (SELECT id FROM {p}incarnation);

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
 WHERE client_id <> ? AND (expires_at < {now} OR (hostid = ? AND hostid <> ''))
 ORDER BY expires_at LIMIT ?;

-- name: session_named_live
-- Whether a session of this name has a lease that has not run out: the
-- job-event subscribers' presence (Sessions.SessionNamedLive).
SELECT COUNT(*) FROM {p}sessions WHERE name = ? AND expires_at > {now};
