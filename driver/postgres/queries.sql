-- PostgreSQL queries. Every query name exists in each dialect's file.
-- {p} is the table prefix, {now} the current time in microseconds.

-- name: session_insert
INSERT INTO {p}sessions (id, client_id, host, pid, name, created_at, expires_at, hostid)
VALUES ($1, $2, $3, $4, $5, {now}, {now} + $6, $7);

-- name: session_renew
UPDATE {p}sessions SET expires_at = {now} + $1 WHERE client_id = $2;

-- name: session_list_by_client
SELECT id FROM {p}sessions WHERE client_id = $1;

-- name: session_delete
DELETE FROM {p}sessions WHERE id = $1;

-- name: session_list_reapable
-- Sessions whose lease ran out, and sessions of processes on this host
-- (same boot, same PID namespace), whose PIDs the caller checks.
SELECT id, pid, expires_at < {now} FROM {p}sessions
 WHERE expires_at < {now} OR (hostid = $1 AND hostid <> '')
 ORDER BY expires_at LIMIT $2;

-- name: ident_ensure
INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p)
VALUES ($1, $2, $3, {now}, 0, 0, 0) ON CONFLICT (kind, ns, name) DO NOTHING;

-- name: ident_lock
SELECT fence, n_r, n_w, n_p FROM {p}lock_idents WHERE kind = $1 AND ns = $2 AND name = $3 FOR UPDATE;

-- name: ident_update
UPDATE {p}lock_idents SET fence = $1, n_r = $2, n_w = $3, n_p = $4 WHERE kind = $5 AND ns = $6 AND name = $7;

-- name: ident_purge_idle
-- Only rows whose counter is more than a second behind the clock: a row
-- created again later starts at the clock, above every token it gave.
DELETE FROM {p}lock_idents WHERE n_r = 0 AND n_w = 0 AND n_p = 0 AND fence < {now} - 1000000;

-- name: fast_acquire_ident
INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p)
VALUES ($1, $2, $3, {now}, $4, $5, 0)
ON CONFLICT (kind, ns, name) DO UPDATE
   SET fence = li.fence + 1, n_r = li.n_r + excluded.n_r, n_w = li.n_w + excluded.n_w
 WHERE li.n_p = 0 AND li.n_w = 0 AND (excluded.n_w = 0 OR li.n_r = 0)
RETURNING fence;

-- name: ident_release
UPDATE {p}lock_idents SET n_r = n_r - $1, n_w = n_w - $2 WHERE kind = $3 AND ns = $4 AND name = $5
RETURNING n_p;

-- name: release_list_ns
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = $1 AND kind = $2 AND ns = $3 AND status = 'G' ORDER BY id DESC;

-- name: release_list_name
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = $1 AND kind = $2 AND ns = $3 AND name = $4 AND status = 'G' ORDER BY id DESC;

-- name: request_list_orphans
-- Requests whose session is gone: a stalled session's statement that landed
-- after another process reaped it.
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests r
 WHERE NOT EXISTS (SELECT 1 FROM {p}sessions s WHERE s.id = r.session_id)
 ORDER BY id LIMIT $1;

-- name: request_list
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE kind = $1 AND ns = $2 AND name = $3 ORDER BY id;

-- name: request_list_by_session
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = $1 ORDER BY id;

-- name: request_list_by_session_kind
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = $1 AND kind = $2 ORDER BY id;

-- name: request_list_by_session_ns
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = $1 AND kind = $2 AND ns = $3 ORDER BY id;

-- name: request_list_call
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = $1 AND call_id = $2 ORDER BY id;

-- name: request_insert
INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, {now}, CASE WHEN $7::text = 'G' THEN {now} END)
RETURNING id;

-- name: request_set_status
UPDATE {p}lock_requests
   SET status = $1, token = $2, granted_at = CASE WHEN $1::text = 'G' THEN {now} ELSE granted_at END
 WHERE id = $3 AND status = $4;

-- name: request_delete
DELETE FROM {p}lock_requests WHERE id IN ({list});

-- name: request_statuses
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE id IN ({list});

-- name: wait_graph
SELECT r.id, r.session_id, r.client_id, r.kind, r.ns, r.name, r.mode, r.status, r.call_id, r.token, r.created_at, r.granted_at
  FROM {p}lock_requests r
 WHERE EXISTS (SELECT 1 FROM {p}lock_requests p
                WHERE p.status = 'P' AND p.kind = r.kind AND p.ns = r.ns AND p.name = r.name)
 ORDER BY r.id;

-- name: detector_lock
SELECT k FROM {p}meta WHERE k = 'deadlock' FOR UPDATE;

-- name: lock_info_list
SELECT r.id, r.session_id, r.client_id, r.kind, r.ns, r.name, r.mode, r.status, r.call_id, r.token, r.created_at, r.granted_at,
       s.host, s.pid, s.name
  FROM {p}lock_requests r JOIN {p}sessions s ON s.id = r.session_id
 ORDER BY r.kind, r.ns, r.name, r.id;

-- name: user_holder
SELECT session_id FROM {p}lock_requests
 WHERE kind = $1 AND ns = $2 AND name = $3 AND status = 'G' ORDER BY id LIMIT 1;

-- name: fast_acquire
-- The uncontended path in one statement: the conditional upsert takes the
-- identifier's row lock and decides on the latest row version; the instance
-- is inserted only when it granted.
WITH li AS (
    INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p)
    VALUES ($1, $2, $3, {now}, $4, $5, 0)
    ON CONFLICT (kind, ns, name) DO UPDATE
       SET fence = li.fence + 1, n_r = li.n_r + excluded.n_r, n_w = li.n_w + excluded.n_w
     WHERE li.n_p = 0 AND li.n_w = 0 AND (excluded.n_w = 0 OR li.n_r = 0)
    RETURNING fence)
INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
SELECT $6, $7, $1, $2, $3, $8, 'G', $9, li.fence, {now}, {now} FROM li
RETURNING id, token;

-- name: fast_release
-- Deletes the session's granted instances (all, or the newest $5), adjusts
-- the counters of their identifiers and, where requests wait, hands the lock
-- on at once with {p}regrant (a volatile function: it sees this statement's
-- changes). Returns per identifier the waiting count before the hand-off,
-- and the number of instances deleted.
WITH d AS (
    DELETE FROM {p}lock_requests
     WHERE id IN (SELECT id FROM {p}lock_requests
                   WHERE session_id = $1 AND kind = $2 AND ns = $3
                     AND ($4::bytea IS NULL OR name = $4) AND status = 'G'
                   ORDER BY id DESC LIMIT $5)
    RETURNING kind, ns, name, mode),
agg AS (
    SELECT kind, ns, name,
           count(*) FILTER (WHERE mode = 'R') AS r,
           count(*) FILTER (WHERE mode = 'W') AS w
      FROM d GROUP BY kind, ns, name),
u AS (
    UPDATE {p}lock_idents li SET n_r = li.n_r - agg.r, n_w = li.n_w - agg.w
      FROM agg WHERE li.kind = agg.kind AND li.ns = agg.ns AND li.name = agg.name
    RETURNING li.kind, li.ns, li.name, li.n_p)
SELECT u.kind, u.ns, u.name, u.n_p, (SELECT count(*) FROM d),
       CASE WHEN u.n_p > 0 THEN {p}regrant(u.kind, u.ns, u.name, $6) END
  FROM u;

-- name: regrant
SELECT {p}regrant($1::smallint, $2, $3, $4);
