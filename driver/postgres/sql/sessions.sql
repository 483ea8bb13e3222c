-- PostgreSQL: the sessions slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds.

-- name: session_insert
INSERT INTO {p}sessions (id, client_id, host, pid, name, created_at, expires_at, hostid)
VALUES ($1, $2, $3, $4, $5, {now}, {now} + $6, $7);

-- name: session_renew
-- Renew the named sessions ({list}, from the second argument on) whose
-- lease has not run out: an expired session is never revived.
UPDATE {p}sessions SET expires_at = {now} + $1 WHERE expires_at > {now} AND id IN ({list});

-- name: session_list_by_client
SELECT id FROM {p}sessions WHERE client_id = $1 AND expires_at > {now};

-- name: session_list
-- Every session, for monitoring.
SELECT id, client_id, host, pid, name, hostid, created_at, expires_at FROM {p}sessions ORDER BY created_at, id;

-- name: session_delete
DELETE FROM {p}sessions WHERE id = $1;

-- name: session_list_reapable
-- Sessions whose lease ran out, and sessions of processes on this host
-- (same boot, same PID namespace), whose PIDs the caller checks; never
-- the caller's own. Arguments: client id, host id, limit.
SELECT id, pid, expires_at < {now} FROM {p}sessions
 WHERE client_id <> $1 AND (expires_at < {now} OR (hostid = $2 AND hostid <> ''))
 ORDER BY expires_at LIMIT $3;

-- only postgres: renewal and reap list in one statement (a writable CTE).
-- name: session_heartbeat
-- The heartbeat in one statement: renew the client's live sessions (never
-- an expired one) and list the sessions of others that may be reaped.
-- Arguments: lease, client id, host id, limit, then the session ids.
WITH r AS (UPDATE {p}sessions SET expires_at = {now} + $1::bigint
           WHERE expires_at > {now} AND id IN ({list}) RETURNING id)
SELECT (SELECT count(*) FROM r), s.id, s.pid, s.expired
  FROM (SELECT 1) AS one
  LEFT JOIN LATERAL (SELECT id, pid, expires_at < {now} AS expired FROM {p}sessions
                      WHERE client_id <> $2 AND (expires_at < {now} OR (hostid = $3 AND hostid <> ''))
                      ORDER BY expires_at LIMIT $4) s ON true;

-- name: session_named_live
-- Whether a session of this name has a lease that has not run out: the
-- job-event subscribers' presence (Sessions.SessionNamedLive).
SELECT COUNT(*) FROM {p}sessions WHERE name = $1 AND expires_at > {now};
