-- SQLite's own queries: the ones no other dialect has, because they
-- use what only SQLite offers (the engine uses a query of this file only
-- where the dialect has it, or this driver's own code does). queries.sql
-- holds the queries every dialect has, under the same names
-- (driver/queries_test.go checks both rules).

-- name: release_delete_ns
DELETE FROM {p}lock_requests
 WHERE id IN (SELECT id FROM {p}lock_requests
               WHERE session_id = ? AND kind = ? AND ns = ? AND status = 'G' ORDER BY id DESC LIMIT ?)
RETURNING id, kind, ns, name, mode;

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

-- name: request_statuses_json
-- request_statuses with the ids as one JSON array (?1): one statement
-- text, prepared once.
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE id IN (SELECT value FROM json_each(?1));

-- name: queues_ready_json
-- queues_ready with the queue names as one JSON array (?1): one statement
-- text, prepared once, for any number of queues.
SELECT q.name FROM {p}queues q
 WHERE q.name IN (SELECT value FROM json_each(?1)) AND q.paused = 0
   AND (SELECT 1 FROM {p}messages m INDEXED BY {p}messages_ready WHERE m.queue = q.name AND m.state = 'R' AND m.run_at <= {now} LIMIT 1) IS NOT NULL;

-- name: inline_adopt
-- In a transaction that is about to change an identifier's requests: its
-- inline holder as a request row under the same id (the insert trigger
-- counts it, inline_clear then uncounts the inline one).
INSERT INTO {p}lock_requests (id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
SELECT h_id, h_session, h_client, kind, ns, name, h_mode, 'G', h_call, h_token, h_at, h_at
  FROM {p}lock_idents WHERE kind = ?1 AND ns = ?2 AND name = ?3 AND h_id IS NOT NULL;

-- name: inline_clear
-- {let_go} (a macro of sqlite.go) uncounts the inline holder and clears
-- its columns.
UPDATE {p}lock_idents
   SET {let_go}
 WHERE kind = ?1 AND ns = ?2 AND name = ?3 AND h_id IS NOT NULL;

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

-- name: release_inline_ns
-- As release_inline_name, every name of a namespace.
UPDATE {p}lock_idents
   SET {let_go}
 WHERE kind = ?2 AND ns = ?3 AND h_session = ?1
RETURNING name, n_p,
          EXISTS (SELECT 1 FROM {p}lock_requests r
                   WHERE r.session_id = ?1 AND r.kind = ?2 AND r.ns = ?3 AND r.status = 'G');

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

-- name: fast_release_name
DELETE FROM {p}lock_requests
 WHERE id IN (SELECT id FROM {p}lock_requests
               WHERE session_id = ?1 AND kind = ?2 AND ns = ?3 AND name = ?5 AND status = 'G' ORDER BY id DESC LIMIT ?4)
RETURNING kind, ns, name,
          (SELECT li.n_p FROM {p}lock_idents li WHERE li.kind = {p}lock_requests.kind AND li.ns = {p}lock_requests.ns AND li.name = {p}lock_requests.name),
          (SELECT count(*) FROM {p}lock_idents li WHERE li.kind = ?2 AND li.ns = ?3 AND li.name = ?5 AND li.h_session = ?1);

-- name: notify_insert
INSERT INTO {p}notifications (channel, payload, created_at) VALUES (?, ?, {now});

-- name: claim_parallel
-- A parallel claim in one statement. Arguments: session, mode, lease,
-- queue, limit, kind ('' for any).
UPDATE {p}messages
   SET state = 'C', claimed_by = ?1, claim_mode = ?2, claim_until = {now} + ?3, attempt = attempt + 1
 WHERE id IN (SELECT id FROM {p}messages INDEXED BY {p}messages_ready
               WHERE queue = ?4 AND state = 'R' AND run_at <= {now} AND (?6 = '' OR kind = ?6)
                 AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = {p}messages.queue AND pq.paused <> 0)
               ORDER BY priority, order_at, id LIMIT ?5)
RETURNING id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel;


-- name: message_insert_json
-- A batch in one statement. ?1 is a JSON array of the messages, in order:
-- {"p": payload in hex, "r": priority, "k": key or null, "d": delay in
-- microseconds, "a": attempt limit, "m": metadata or null, "n": kind or null}; ?2 the queue.
INSERT INTO {p}messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind)
SELECT ?2, unhex(json_extract(j.value, '$.p')), json_extract(j.value, '$.r'), json_extract(j.value, '$.k'),
       {now} + json_extract(j.value, '$.d'), {now} + json_extract(j.value, '$.d'), 0,
       json_extract(j.value, '$.a'), 'R', '', {now}, json_extract(j.value, '$.m'), json_extract(j.value, '$.n')
  FROM json_each(?1) AS j ORDER BY j.key
RETURNING id;

-- name: message_ack_many_json
-- message_ack_many with the claims as one JSON array of [id, attempt]
-- pairs (?2): one statement text whatever their number, prepared once.
DELETE FROM {p}messages
 WHERE claimed_by = ?1 AND state = 'C' AND cancel = 0
   AND id IN (SELECT json_extract(j.value, '$[0]') FROM json_each(?2) AS j)
   AND (id, attempt) IN (SELECT json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]') FROM json_each(?2) AS j);

-- name: message_finish_many_json
-- Completes claims of one session (the claims as in message_ack_many_json)
-- in one statement: marking them completed moves them to the history (the
-- trigger of migration 019).
UPDATE {p}messages SET state = 'K'
 WHERE claimed_by = ?1 AND state = 'C' AND cancel = 0
   AND id IN (SELECT json_extract(j.value, '$[0]') FROM json_each(?2) AS j)
   AND (id, attempt) IN (SELECT json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]') FROM json_each(?2) AS j);

-- name: tx_gate
-- In the caller's transaction: a write that changes nothing, for the
-- database's write lock, which is a transaction's gate on SQLite (see
-- txlocks.go).
UPDATE {p}lock_idents SET gated = 0 WHERE kind < 0;

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
