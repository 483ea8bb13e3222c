-- PostgreSQL's own queries: the ones no other dialect has, because they
-- use what only PostgreSQL offers (the engine uses a query of this file only
-- where the dialect has it, or this driver's own code does). queries.sql
-- holds the queries every dialect has, under the same names
-- (driver/queries_test.go checks both rules).

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
RETURNING id, token, (SELECT id FROM {p}incarnation);

-- name: incarnation
-- The lock state's incarnation ({p}incarnation, emptied by crash recovery)
-- and how long from now until it may grant a lock. Records $1 as a lease in
-- use (in the logged meta table); writes a new incarnation when the row is
-- gone, lockable from now plus the longest lease recorded.
WITH rec AS (
    INSERT INTO {p}meta AS m (k, v) VALUES ('max_lease_us', $1::bigint::text)
    ON CONFLICT (k) DO UPDATE SET v = excluded.v WHERE m.v::bigint < excluded.v::bigint),
ins AS (
    INSERT INTO {p}incarnation (one, id, lockable_from)
    SELECT 1, {now}, {now} + GREATEST($1::bigint, COALESCE((SELECT v::bigint FROM {p}meta WHERE k = 'max_lease_us'), 0))
    ON CONFLICT (one) DO NOTHING
    RETURNING id, lockable_from),
cur AS (SELECT id, lockable_from FROM ins UNION ALL SELECT id, lockable_from FROM {p}incarnation)
SELECT id, GREATEST(0, lockable_from - {now}) FROM cur LIMIT 1;

-- name: fast_acquire_many
-- Several names of one namespace at once, all or none: see
-- {p}fast_acquire_many (migration 011).
SELECT o_name, o_id, o_token, o_incarnation FROM {p}fast_acquire_many($1::smallint, $2, $3::bytea[], $4, $5, $6, $7, $8, $9);

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

-- ---- notifications ----
-- NOTIFY reaches the clients that LISTEN. Clients behind a transaction
-- pooler without listen_dsn cannot: they read {p}notifications instead,
-- registered in {p}notify_pollers while they do.

-- name: notify_send
-- NOTIFY, and, in the same statement (it rides in the caller's
-- transaction), the notification in {p}notifications while some client
-- reads from there. Arguments: the NOTIFY channel, the notification's
-- channel, its payload.
WITH ins AS (
    INSERT INTO {p}notifications (channel, payload, created_at)
    SELECT $2::text, $3::text, {now}
     WHERE EXISTS (SELECT 1 FROM {p}notify_pollers WHERE expires_at > {now})
)
SELECT pg_notify($1, $2::text || ' ' || $3::text);

-- name: notify_poller_register
-- Arguments: client id, how long the registration runs (microseconds).
INSERT INTO {p}notify_pollers (client_id, expires_at) VALUES ($1, {now} + $2)
ON CONFLICT (client_id) DO UPDATE SET expires_at = EXCLUDED.expires_at;

-- name: notify_poller_delete
DELETE FROM {p}notify_pollers WHERE client_id = $1;

-- ---- queues ----
-- Message columns, in the order sqldriver.ScanMessage reads them:
-- id, queue, payload, priority, msg_key, run_at, order_at, attempt,
-- max_attempts, state, claimed_by, claim_mode, claim_until, last_error,
-- created_at.

-- name: message_insert_many
-- Many messages of one queue in one statement, one array element per
-- message: payloads, priorities, keys, whether each has a key, delays,
-- attempt limits, metadata (NULL: none); then the queue, then the kinds (NULL: none). Rows are inserted
-- in the arrays' order, so their ids rise in that order (the caller sorts
-- what RETURNING gives).
INSERT INTO {p}messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind)
SELECT $8, u.payload, u.priority, CASE WHEN u.has_key THEN u.msg_key END, {now} + u.delay, {now} + u.delay, 0, u.attempts, 'R', '', {now}, u.meta, u.kind
  FROM unnest($1::bytea[], $2::int[], $3::text[], $4::bool[], $5::bigint[], $6::int[], $7::text[], $9::text[])
       WITH ORDINALITY AS u(payload, priority, msg_key, has_key, delay, attempts, meta, kind, ord)
 ORDER BY u.ord
RETURNING id;

-- name: claim_parallel
-- A parallel claim in one statement; SKIP LOCKED lets concurrent claimers
-- pass each other. Arguments: session, mode, lease, queue, limit, kind (''
-- for any).
UPDATE {p}messages
   SET state = 'C', claimed_by = $1, claim_mode = $2::int, claim_until = {now} + $3::bigint, attempt = attempt + 1
 WHERE id IN (SELECT id FROM {p}messages
               WHERE queue = $4 AND state = 'R' AND run_at <= {now} AND ($6::text = '' OR kind = $6)
                 AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = {p}messages.queue AND pq.paused <> 0)
               ORDER BY priority, order_at, id LIMIT $5
                 FOR UPDATE SKIP LOCKED)
RETURNING id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel;

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


-- name: message_finish_many
-- Completes many claims of one session in one statement: deletes them
-- ((id, attempt) pairs, as message_ack_many) and writes them to the history.
WITH d AS (
    DELETE FROM {p}messages WHERE claimed_by = $1 AND state = 'C' AND id IN ({ids}) AND (id, attempt) IN ({pairs2})
    RETURNING id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, meta, kind, errors)
INSERT INTO {p}finished (id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors)
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, {now}, meta, 'K', kind, errors FROM d;
