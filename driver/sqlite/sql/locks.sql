-- SQLite: the locks slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds.
-- Transactions start with BEGIN IMMEDIATE, so the database is locked for
-- writing from the first statement: row locks are not needed.

-- name: ident_ensure
INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p)
VALUES (?, ?, ?, {now}, 0, 0, 0) ON CONFLICT (kind, ns, name) DO NOTHING;

-- name: ident_lock
SELECT fence, n_r, n_w, n_p, gated FROM {p}lock_idents WHERE kind = ? AND ns = ? AND name = ?;

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
  FROM {p}lock_holds WHERE session_id = ? AND kind = ? AND ns = ? AND status = 'G' ORDER BY id DESC;

-- name: release_list_name
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE session_id = ? AND kind = ? AND ns = ? AND name = ? AND status = 'G' ORDER BY id DESC;

-- name: request_list_orphans
-- Requests whose session is gone: a stalled session's statement that landed
-- after another process reaped it.
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds r
 WHERE NOT EXISTS (SELECT 1 FROM {p}sessions s WHERE s.id = r.session_id)
 ORDER BY id LIMIT ?;

-- name: request_list
-- The inline holder (migration 028) and the request rows written out
-- rather than through {p}lock_holds: SQLite merges two ordered arms
-- without sorting (the view costs a sort; this is the hand-on's read).
SELECT h_id, h_session, h_client, kind, ns, name, h_mode, 'G', h_call, h_token, h_at, h_at
  FROM {p}lock_idents WHERE kind = ?1 AND ns = ?2 AND name = ?3 AND h_id IS NOT NULL
UNION ALL
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests WHERE kind = ?1 AND ns = ?2 AND name = ?3
ORDER BY 1;

-- name: request_list_by_session
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE session_id = ? ORDER BY id;

-- name: request_list_by_session_kind
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE session_id = ? AND kind = ? ORDER BY id;

-- name: request_list_by_session_ns
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE session_id = ? AND kind = ? AND ns = ? ORDER BY id;

-- name: request_list_call
-- The requests of one call (session, call) among its identifiers: kind,
-- namespace, names from the first to the last (a call's names are sorted),
-- so that the read covers their key range, not every lock row.
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE session_id = ? AND call_id = ? AND kind = ? AND ns = ? AND name BETWEEN ? AND ? ORDER BY id;

-- name: lock_conflict_held
-- Whether another session holds the identifier (kind, namespace, name)
-- in a mode that conflicts with the one given (inline, or as a granted
-- request): a try that would be refused whatever the queue. The
-- arguments come twice, once for each table.
SELECT EXISTS (SELECT 1 FROM {p}lock_idents
                WHERE kind = ? AND ns = ? AND name = ? AND h_id IS NOT NULL
                  AND h_session <> ? AND (h_mode = 'W' OR ? = 'W'))
    OR EXISTS (SELECT 1 FROM {p}lock_requests
                WHERE kind = ? AND ns = ? AND name = ? AND status = 'G'
                  AND session_id <> ? AND (mode = 'W' OR ? = 'W'));

-- name: request_insert
INSERT INTO {p}lock_requests (id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
VALUES ({next_id}, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, {now}, CASE WHEN ?7 = 'G' THEN {now} END)
RETURNING id;

-- name: request_set_status
UPDATE {p}lock_requests
   SET status = ?1, token = ?2, granted_at = CASE WHEN ?1 = 'G' THEN {now} ELSE granted_at END
 WHERE id = ?3 AND status = ?4;

-- name: request_delete
DELETE FROM {p}lock_requests WHERE id IN ({list});

-- name: request_statuses
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE id IN ({list});

-- name: wait_graph
SELECT r.id, r.session_id, r.client_id, r.kind, r.ns, r.name, r.mode, r.status, r.call_id, r.token, r.created_at, r.granted_at
  FROM {p}lock_holds r
 WHERE EXISTS (SELECT 1 FROM {p}lock_requests p
                WHERE p.status = 'P' AND p.kind = r.kind AND p.ns = r.ns AND p.name = r.name)
 ORDER BY r.id;

-- name: detector_lock
SELECT 1;

-- name: lock_info_list
-- The requests and inline holders ({p}lock_holds), and the contenders
-- waiting behind a turnstile past its first 25 ms (migration 030), as
-- waiting write requests, but for a call that holds an instance
-- already (granted: its listing is deleted after the call returns).
SELECT r.id, r.session_id, r.client_id, r.kind, r.ns, r.name, r.mode, r.status, r.call_id, r.token, r.created_at, r.granted_at,
       s.host, s.pid, s.name
  FROM (SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
          FROM {p}lock_holds
        UNION ALL
        SELECT w.id, w.session_id, w.client_id, w.kind, w.ns, w.name, 'W', 'P', w.call_id, 0, w.created_at, NULL
          FROM {p}lock_waits w
         WHERE NOT EXISTS (SELECT 1 FROM {p}lock_holds h WHERE h.session_id = w.session_id AND h.call_id = w.call_id)) r
  JOIN {p}sessions s ON s.id = r.session_id
 ORDER BY r.kind, r.ns, r.name, r.id;

-- name: user_holder
SELECT session_id FROM {p}lock_holds
 WHERE kind = ? AND ns = ? AND name = ? AND status = 'G' ORDER BY id LIMIT 1;

-- only sqlite: the release as one DELETE ... RETURNING.
-- name: release_delete_ns
DELETE FROM {p}lock_requests
 WHERE id IN (SELECT id FROM {p}lock_requests
               WHERE session_id = ? AND kind = ? AND ns = ? AND status = 'G' ORDER BY id DESC LIMIT ?)
RETURNING id, kind, ns, name, mode;

-- only sqlite: the release as one DELETE ... RETURNING.
-- name: release_delete_name
DELETE FROM {p}lock_requests
 WHERE id IN (SELECT id FROM {p}lock_requests
               WHERE session_id = ? AND kind = ? AND ns = ? AND name = ? AND status = 'G' ORDER BY id DESC LIMIT ?)
RETURNING id, kind, ns, name, mode;

-- name: fast_acquire
-- One autocommit statement: on a free identifier (no row, or one with
-- nothing granted and nobody waiting) the instance becomes the row's
-- inline holder (migration 028) with the next token, and nothing else is
-- written. ?8 is the holder's id (random, negative).
INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p, h_id, h_session, h_client, h_mode, h_call, h_token, h_at)
VALUES (?3, ?4, ?5, {now}, ?6 = 'R', ?6 = 'W', 0, ?8, ?1, ?2, ?6, ?7, {now}, {now})
ON CONFLICT (kind, ns, name) DO UPDATE
   SET fence = li.fence + 1, n_r = excluded.n_r, n_w = excluded.n_w,
       h_id = excluded.h_id, h_session = excluded.h_session, h_client = excluded.h_client,
       h_mode = excluded.h_mode, h_call = excluded.h_call, h_token = li.fence + 1, h_at = excluded.h_at
 WHERE li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0
RETURNING h_id, h_token;

-- only sqlite, postgres: a reader beside readers, in one statement.
-- name: fast_acquire_shared
-- A reader beside granted readers, nobody waiting, in one autocommit
-- statement: a request row, inserted with the next token; the insert
-- trigger counts it on the lock row. SQLite's single writer makes the
-- check and the insert atomic.
INSERT INTO {p}lock_requests (id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
SELECT {next_id}, ?1, ?2, ?3, ?4, ?5, 'R', 'G', ?7, li.fence + 1, {now}, {now}
  FROM {p}lock_idents li
 WHERE li.kind = ?3 AND li.ns = ?4 AND li.name = ?5 AND li.n_p = 0 AND li.n_w = 0 AND li.n_r > 0
RETURNING id, token;

-- only sqlite: a list as one JSON argument, prepared once.
-- name: request_statuses_json
-- request_statuses with the ids as one JSON array (?1): one statement
-- text, prepared once.
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE id IN (SELECT value FROM json_each(?1));

-- only sqlite: the inline holder turned into a request row in SQL.
-- name: inline_adopt
-- In a transaction that is about to change an identifier's requests: its
-- inline holder as a request row under the same id (the insert trigger
-- counts it, inline_clear then uncounts the inline one).
INSERT INTO {p}lock_requests (id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
SELECT h_id, h_session, h_client, kind, ns, name, h_mode, 'G', h_call, h_token, h_at, h_at
  FROM {p}lock_idents WHERE kind = ?1 AND ns = ?2 AND name = ?3 AND h_id IS NOT NULL;

-- only sqlite: the inline holder turned into a request row in SQL.
-- name: inline_clear
-- {let_go} (a macro of sqlite.go) uncounts the inline holder and clears
-- its columns.
UPDATE {p}lock_idents
   SET {let_go}
 WHERE kind = ?1 AND ns = ?2 AND name = ?3 AND h_id IS NOT NULL;

-- only sqlite, postgres: MySQL's inline holders are in {p}lock_fast.
-- name: release_inline_name
-- One autocommit statement: the session's inline holder of one name let
-- go; per released holder its waiting count and whether the session also
-- has granted request rows there.
UPDATE {p}lock_idents
   SET {let_go}
 WHERE kind = ?2 AND ns = ?3 AND name = ?4 AND h_session = ?1
RETURNING name, n_p,
          EXISTS (SELECT 1 FROM {p}lock_requests r
                   WHERE r.session_id = ?1 AND r.kind = ?2 AND r.ns = ?3 AND r.name = ?4 AND r.status = 'G');

-- only sqlite: PostgreSQL's release_inline covers a namespace.
-- name: release_inline_ns
-- As release_inline_name, every name of a namespace.
UPDATE {p}lock_idents
   SET {let_go}
 WHERE kind = ?2 AND ns = ?3 AND h_session = ?1
RETURNING name, n_p,
          EXISTS (SELECT 1 FROM {p}lock_requests r
                   WHERE r.session_id = ?1 AND r.kind = ?2 AND r.ns = ?3 AND r.status = 'G');

-- only sqlite, mysql: PostgreSQL has release_ns and release_inline.
-- name: fast_release_ns
-- One autocommit statement: deletes the session's granted request rows
-- (the delete trigger adjusts the counters) and says, per instance, how
-- many requests wait on its lock, and how many inline holders (migration
-- 028) the session has in scope besides.
DELETE FROM {p}lock_requests
 WHERE id IN (SELECT id FROM {p}lock_requests
               WHERE session_id = ?1 AND kind = ?2 AND ns = ?3 AND status = 'G' ORDER BY id DESC LIMIT ?4)
RETURNING kind, ns, name,
          (SELECT li.n_p FROM {p}lock_idents li WHERE li.kind = {p}lock_requests.kind AND li.ns = {p}lock_requests.ns AND li.name = {p}lock_requests.name),
          (SELECT count(*) FROM {p}lock_idents li WHERE li.kind = ?2 AND li.ns = ?3 AND li.h_session = ?1);

-- only sqlite, mysql: PostgreSQL has release_name and release_inline.
-- name: fast_release_name
DELETE FROM {p}lock_requests
 WHERE id IN (SELECT id FROM {p}lock_requests
               WHERE session_id = ?1 AND kind = ?2 AND ns = ?3 AND name = ?5 AND status = 'G' ORDER BY id DESC LIMIT ?4)
RETURNING kind, ns, name,
          (SELECT li.n_p FROM {p}lock_idents li WHERE li.kind = {p}lock_requests.kind AND li.ns = {p}lock_requests.ns AND li.name = {p}lock_requests.name),
          (SELECT count(*) FROM {p}lock_idents li WHERE li.kind = ?2 AND li.ns = ?3 AND li.name = ?5 AND li.h_session = ?1);

-- only sqlite, postgres: MySQL builds the gate's locking reads in txlocks.go.
-- name: tx_gate
-- In the caller's transaction: a write that changes nothing, for the
-- database's write lock, which is a transaction's gate on SQLite (see
-- txlocks.go).
UPDATE {p}lock_idents SET gated = 0 WHERE kind < 0;

-- only sqlite: a transaction's gate is the write lock (txlocks.go).
-- name: tx_gate_sessions
-- In the caller's transaction, once it holds the write lock: the sessions'
-- granted instances in conflict with a lock of mode ?4.
SELECT count(*) FROM {p}lock_holds
 WHERE kind = ?1 AND ns = ?2 AND name = ?3 AND status = 'G' AND (mode = 'W' OR ?4 = 'W');

-- name: turnstile_wait_mark
-- A contender waiting behind a turnstile past its first 25 ms, for
-- monitoring (migration 030): session, call, the row's id (negative, as
-- an inline holder's), client, kind, namespace, name.
INSERT OR IGNORE INTO {p}lock_waits (session_id, call_id, id, client_id, kind, ns, name, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, {now});

-- name: turnstile_wait_unmark
DELETE FROM {p}lock_waits WHERE session_id = ? AND call_id = ?;

-- name: turnstile_waits_purge
-- The marks of sessions that are gone (a process that died waiting).
DELETE FROM {p}lock_waits WHERE session_id NOT IN (SELECT id FROM {p}sessions);
