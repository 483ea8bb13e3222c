-- SQLite queries. Every query name exists in each dialect's file.
-- {p} is the table prefix, {now} the current time in microseconds.
-- Transactions start with BEGIN IMMEDIATE, so the database is locked for
-- writing from the first statement: row locks are not needed.

-- name: session_insert
INSERT INTO {p}sessions (id, client_id, host, pid, name, created_at, expires_at, hostid)
VALUES (?1, ?2, ?3, ?4, ?5, {now}, {now} + ?6, ?7);

-- name: session_renew
UPDATE {p}sessions SET expires_at = {now} + ?1 WHERE client_id = ?2;

-- name: session_list_by_client
SELECT id FROM {p}sessions WHERE client_id = ?;

-- name: session_delete
DELETE FROM {p}sessions WHERE id = ?;

-- name: session_list_reapable
-- Sessions whose lease ran out, and sessions of processes on this host
-- (same boot, same PID namespace), whose PIDs the caller checks.
SELECT id, pid, expires_at < {now} FROM {p}sessions
 WHERE expires_at < {now} OR (hostid = ?1 AND hostid <> '')
 ORDER BY expires_at LIMIT ?2;

-- name: ident_ensure
INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p)
VALUES (?, ?, ?, {now}, 0, 0, 0) ON CONFLICT (kind, ns, name) DO NOTHING;

-- name: ident_lock
SELECT fence, n_r, n_w, n_p FROM {p}lock_idents WHERE kind = ? AND ns = ? AND name = ?;

-- name: ident_update
UPDATE {p}lock_idents SET fence = ?, n_r = ?, n_w = ?, n_p = ? WHERE kind = ? AND ns = ? AND name = ?;

-- name: ident_purge_idle
-- Only rows whose counter is more than a second behind the clock: a row
-- created again later starts at the clock, above every token it gave.
DELETE FROM {p}lock_idents WHERE n_r = 0 AND n_w = 0 AND n_p = 0 AND fence < {now} - 1000000;

-- name: fast_acquire_ident
INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p)
VALUES (?1, ?2, ?3, {now}, ?4, ?5, 0)
ON CONFLICT (kind, ns, name) DO UPDATE
   SET fence = li.fence + 1, n_r = li.n_r + excluded.n_r, n_w = li.n_w + excluded.n_w
 WHERE li.n_p = 0 AND li.n_w = 0 AND (excluded.n_w = 0 OR li.n_r = 0)
RETURNING fence;

-- name: ident_release
UPDATE {p}lock_idents SET n_r = n_r - ?, n_w = n_w - ? WHERE kind = ? AND ns = ? AND name = ?
RETURNING n_p;

-- name: release_list_ns
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = ? AND kind = ? AND ns = ? AND status = 'G' ORDER BY id DESC;

-- name: release_list_name
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = ? AND kind = ? AND ns = ? AND name = ? AND status = 'G' ORDER BY id DESC;

-- name: release_delete_ns
DELETE FROM {p}lock_requests
 WHERE id IN (SELECT id FROM {p}lock_requests
               WHERE session_id = ? AND kind = ? AND ns = ? AND status = 'G' ORDER BY id DESC LIMIT ?)
RETURNING kind, ns, name, mode;

-- name: release_delete_name
DELETE FROM {p}lock_requests
 WHERE id IN (SELECT id FROM {p}lock_requests
               WHERE session_id = ? AND kind = ? AND ns = ? AND name = ? AND status = 'G' ORDER BY id DESC LIMIT ?)
RETURNING kind, ns, name, mode;

-- name: request_list_orphans
-- Requests whose session is gone: a stalled session's statement that landed
-- after another process reaped it.
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests r
 WHERE NOT EXISTS (SELECT 1 FROM {p}sessions s WHERE s.id = r.session_id)
 ORDER BY id LIMIT ?;

-- name: request_list
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE kind = ? AND ns = ? AND name = ? ORDER BY id;

-- name: request_list_by_session
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = ? ORDER BY id;

-- name: request_list_by_session_kind
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = ? AND kind = ? ORDER BY id;

-- name: request_list_by_session_ns
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = ? AND kind = ? AND ns = ? ORDER BY id;

-- name: request_list_call
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE session_id = ? AND call_id = ? ORDER BY id;

-- name: request_insert
INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, {now}, CASE WHEN ?7 = 'G' THEN {now} END)
RETURNING id;

-- name: request_set_status
UPDATE {p}lock_requests
   SET status = ?1, token = ?2, granted_at = CASE WHEN ?1 = 'G' THEN {now} ELSE granted_at END
 WHERE id = ?3 AND status = ?4;

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
SELECT 1;

-- name: lock_info_list
SELECT r.id, r.session_id, r.client_id, r.kind, r.ns, r.name, r.mode, r.status, r.call_id, r.token, r.created_at, r.granted_at,
       s.host, s.pid, s.name
  FROM {p}lock_requests r JOIN {p}sessions s ON s.id = r.session_id
 ORDER BY r.kind, r.ns, r.name, r.id;

-- name: user_holder
SELECT session_id FROM {p}lock_requests
 WHERE kind = ? AND ns = ? AND name = ? AND status = 'G' ORDER BY id LIMIT 1;

-- name: fast_acquire
-- One autocommit statement: the instance is inserted, with the next token,
-- only when nobody holds a conflicting lock and nobody waits; the insert
-- trigger then counts it on the lock row. SQLite's single writer makes the
-- check and the insert atomic.
INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, 'G', ?7, COALESCE(li.fence + 1, {now}), {now}, {now}
  FROM (SELECT 1) AS one
  LEFT JOIN {p}lock_idents li ON li.kind = ?3 AND li.ns = ?4 AND li.name = ?5
 WHERE li.kind IS NULL OR (li.n_p = 0 AND li.n_w = 0 AND (?6 = 'R' OR li.n_r = 0))
RETURNING id, token;

-- name: fast_release_ns
-- One autocommit statement: deletes the session's instances (the delete
-- trigger adjusts the counters) and says, per instance, how many requests
-- wait on its lock.
DELETE FROM {p}lock_requests
 WHERE id IN (SELECT id FROM {p}lock_requests
               WHERE session_id = ?1 AND kind = ?2 AND ns = ?3 AND status = 'G' ORDER BY id DESC LIMIT ?4)
RETURNING kind, ns, name,
          (SELECT li.n_p FROM {p}lock_idents li WHERE li.kind = {p}lock_requests.kind AND li.ns = {p}lock_requests.ns AND li.name = {p}lock_requests.name);

-- name: fast_release_name
DELETE FROM {p}lock_requests
 WHERE id IN (SELECT id FROM {p}lock_requests
               WHERE session_id = ?1 AND kind = ?2 AND ns = ?3 AND name = ?5 AND status = 'G' ORDER BY id DESC LIMIT ?4)
RETURNING kind, ns, name,
          (SELECT li.n_p FROM {p}lock_idents li WHERE li.kind = {p}lock_requests.kind AND li.ns = {p}lock_requests.ns AND li.name = {p}lock_requests.name);

-- name: notify_insert
INSERT INTO {p}notifications (channel, payload, created_at) VALUES (?, ?, {now});

-- name: notify_max
SELECT MAX(id) FROM {p}notifications;

-- name: notify_since
SELECT id, channel, payload FROM {p}notifications WHERE id > ? ORDER BY id LIMIT 1000;

-- name: notify_ids
SELECT id, channel, payload FROM {p}notifications WHERE id IN ({list});

-- name: notify_purge
DELETE FROM {p}notifications WHERE created_at < {now} - ?;
