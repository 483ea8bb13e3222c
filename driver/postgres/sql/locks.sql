-- PostgreSQL: the locks slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds.

-- name: ident_ensure
INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p)
VALUES ($1, $2, $3, {now}, 0, 0, 0) ON CONFLICT (kind, ns, name) DO NOTHING;

-- name: ident_lock
SELECT fence, n_r, n_w, n_p, gated FROM {p}lock_idents WHERE kind = $1 AND ns = $2 AND name = $3 FOR UPDATE;

-- name: ident_update
UPDATE {p}lock_idents SET fence = $1, n_r = $2, n_w = $3, n_p = $4 WHERE kind = $5 AND ns = $6 AND name = $7;

-- name: ident_purge_idle
-- Only rows whose counter is more than a second behind the clock: a row
-- created again later starts at the clock, above every token it gave.
-- Never a gated row (migration 020): LockTx relies on the mark once it
-- has set it.
DELETE FROM {p}lock_idents WHERE n_r = 0 AND n_w = 0 AND n_p = 0 AND NOT gated AND fence < {now} - 1000000;

-- name: fast_acquire_ident
INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p)
VALUES ($1, $2, $3, {now}, $4, $5, 0)
ON CONFLICT (kind, ns, name) DO UPDATE
   SET fence = li.fence + 1, n_r = li.n_r + excluded.n_r, n_w = li.n_w + excluded.n_w
 WHERE li.n_p = 0 AND li.n_w = 0 AND (excluded.n_w = 0 OR li.n_r = 0) AND NOT li.gated
RETURNING fence;

-- name: ident_release
UPDATE {p}lock_idents SET n_r = n_r - $1, n_w = n_w - $2 WHERE kind = $3 AND ns = $4 AND name = $5
RETURNING n_p;

-- name: release_list_ns
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE session_id = $1 AND kind = $2 AND ns = $3 AND status = 'G' ORDER BY id DESC;

-- name: release_list_name
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE session_id = $1 AND kind = $2 AND ns = $3 AND name = $4 AND status = 'G' ORDER BY id DESC;

-- name: request_list_orphans
-- Requests whose session is gone: a stalled session's statement that landed
-- after another process reaped it.
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds r
 WHERE NOT EXISTS (SELECT 1 FROM {p}sessions s WHERE s.id = r.session_id)
 ORDER BY id LIMIT $1;

-- name: request_list
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE kind = $1 AND ns = $2 AND name = $3 ORDER BY id;

-- name: request_list_by_session
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE session_id = $1 ORDER BY id;

-- name: request_list_by_session_kind
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE session_id = $1 AND kind = $2 ORDER BY id;

-- name: request_list_by_session_ns
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE session_id = $1 AND kind = $2 AND ns = $3 ORDER BY id;

-- name: request_list_call
-- The requests of one call ($1 session, $2 call) among its identifiers:
-- $3 kind, $4 namespace, names from $5 to $6 (a call's names are sorted),
-- so that the read covers their key range, not every lock row (the inline
-- holders' columns have no index).
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE session_id = $1 AND call_id = $2 AND kind = $3 AND ns = $4 AND name BETWEEN $5 AND $6 ORDER BY id;

-- name: lock_conflict_held
-- Whether another session than $4 holds $1 kind, $2 namespace, $3 name
-- in a mode that conflicts with $5 (inline, or as a granted request):
-- a try that would be refused whatever the queue.
SELECT EXISTS (SELECT 1 FROM {p}lock_idents
                WHERE kind = $1 AND ns = $2 AND name = $3 AND h_id IS NOT NULL
                  AND h_session <> $4 AND (h_mode = 'W' OR $5::text = 'W'))
    OR EXISTS (SELECT 1 FROM {p}lock_requests
                WHERE kind = $1 AND ns = $2 AND name = $3 AND status = 'G'
                  AND session_id <> $4 AND (mode = 'W' OR $5::text = 'W'));

-- name: request_insert
INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, {now}, CASE WHEN $7::text = 'G' THEN {now} END)
RETURNING id;

-- name: request_set_status
UPDATE {p}lock_requests
   SET status = $1, token = $2, granted_at = CASE WHEN $1::text = 'G' THEN {now} ELSE granted_at END
 WHERE id = $3 AND status = $4;

-- name: request_delete
-- Request rows and inline holders (migration 017) alike; the caller has
-- locked their identifiers and stores their counters afterwards.
WITH d AS (DELETE FROM {p}lock_requests WHERE id IN ({list}))
UPDATE {p}lock_idents
   SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_token = NULL, h_at = NULL
 WHERE h_id IN ({list});

-- name: request_statuses
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE id IN ({list});

-- name: wait_graph
SELECT r.id, r.session_id, r.client_id, r.kind, r.ns, r.name, r.mode, r.status, r.call_id, r.token, r.created_at, r.granted_at
  FROM {p}lock_holds r
 WHERE EXISTS (SELECT 1 FROM {p}lock_holds p
                WHERE p.status = 'P' AND p.kind = r.kind AND p.ns = r.ns AND p.name = r.name)
 ORDER BY r.id;

-- name: detector_lock
SELECT k FROM {p}meta WHERE k = 'deadlock' FOR UPDATE;

-- name: lock_info_list
-- The requests and inline holders ({p}lock_holds), and the contenders
-- waiting behind a turnstile past its first 25 ms (migration 029), as
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
 WHERE kind = $1 AND ns = $2 AND name = $3 AND status = 'G' ORDER BY id LIMIT 1;

-- name: fast_acquire
-- The uncontended path in one statement, on a free identifier only (no
-- holder, nobody waiting): the conditional upsert takes the identifier's
-- row lock, decides on the latest row version and makes the instance the
-- row's inline holder (migration 017), with no request row. Anything else
-- (a second reader, re-entry, a wait, a gated identifier: migration 020)
-- is {p}request's. A conflicting upsert locks the row even when its
-- condition refuses, so the statement first reads the row without a lock
-- and tries nothing when it is taken: under contention a refused attempt
-- no longer queues behind the row lock's holders (contend8 +18%,
-- docs/benchmarks.md). Arguments: kind, namespace, name, readers and
-- writers added (1, 0 or 0, 1), session, client, mode, call. Migration
-- 032's {p}turnstile_take and fast_acquire_many_free carry copies of the
-- ON CONFLICT clause (TestTurnstileTakeFollowsFastPath keeps them in
-- step).
INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p, h_id, h_session, h_client, h_mode, h_call, h_token, h_at, inc)
SELECT $1::smallint, $2::bytea, $3::bytea, x.t, $4::bigint, $5::bigint, 0, nextval('{p}lock_requests_id_seq'),
       $6::text, $7::text, $8::text, $9::bigint, x.t, x.t, (SELECT id FROM {p}incarnation)
  FROM (SELECT {now} AS t) x
 WHERE NOT EXISTS (SELECT 1 FROM {p}lock_idents b
                    WHERE b.kind = $1 AND b.ns = $2 AND b.name = $3
                      AND (b.n_r <> 0 OR b.n_w <> 0 OR b.n_p <> 0 OR b.gated))
ON CONFLICT (kind, ns, name) DO UPDATE
   SET fence = li.fence + 1, n_r = excluded.n_r, n_w = excluded.n_w,
       h_id = excluded.h_id, h_session = excluded.h_session, h_client = excluded.h_client,
       h_mode = excluded.h_mode, h_call = excluded.h_call, h_token = li.fence + 1, h_at = excluded.h_at
 WHERE li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0 AND NOT li.gated
RETURNING li.h_id, li.h_token, COALESCE(li.inc, (SELECT id FROM {p}incarnation));

-- only postgres: crash recovery empties the lock state.
-- name: ident_incarnation
-- Sets an identifier row's incarnation (migration 036) where it is not set
-- and returns it: fast_acquire_existing granted from a row that has none.
-- The row is this session's (it holds the lock), so it is there unless a
-- crash emptied the lock state since, and then no row comes back.
-- Arguments: kind, namespace, name.
UPDATE {p}lock_idents SET inc = COALESCE(inc, (SELECT id FROM {p}incarnation))
 WHERE kind = $1::smallint AND ns = $2::bytea AND name = $3::bytea
RETURNING inc;

-- only postgres: fast_acquire as a plain UPDATE, cheaper on PostgreSQL.
-- name: fast_acquire_existing
-- fast_acquire for an identifier whose row exists, as a plain UPDATE: the
-- upsert's INSERT ... SELECT ... ON CONFLICT costs the server about a
-- fifth more per acquire than an update of the same columns
-- (docs/benchmarks.md, "PostgreSQL: the uncontended acquire as an
-- update"). The update's condition is read on the row version its
-- snapshot sees, so a row taken before the statement began is refused
-- without waiting for its lock, as the upsert's unlocked read first did.
-- No row also when the row is missing (the upkeep deletes idle rows): the
-- driver runs it only for rows it has seen (Driver.seen), and runs the
-- upsert after a refusal, which makes a deleted row again or refuses as
-- well (one statement more once per contended stretch: the engine's
-- contention hint then keeps the calls off the fast path). Arguments and
-- the row returned as fast_acquire's; the columns set as fast_acquire's
-- DO UPDATE sets them (TestFastAcquireExistingFollowsUpsert;
-- fast_acquire_many_existing carries a copy of the SET clause,
-- TestTurnstileTakeFollowsFastPath). The incarnation comes from the row
-- (migration 036), without reading {p}incarnation: a row whose inc is not
-- set returns NULL, and the driver sets it with ident_incarnation
-- (Driver.LockFastAcquire), once in the row's life.
UPDATE {p}lock_idents li
   SET fence = li.fence + 1, n_r = $4::bigint, n_w = $5::bigint, h_id = nextval('{p}lock_requests_id_seq'),
       h_session = $6::text, h_client = $7::text, h_mode = $8::text, h_call = $9::bigint, h_token = li.fence + 1,
       h_at = {now}
 WHERE li.kind = $1::smallint AND li.ns = $2::bytea AND li.name = $3::bytea
   AND li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0 AND NOT li.gated
RETURNING li.h_id, li.h_token, li.inc;

-- only sqlite, postgres: a reader beside readers, in one statement.
-- name: fast_acquire_shared
-- A reader beside other readers, in one statement (fast_acquire refused
-- it: the lock is not free): the conditional upsert takes the identifier's
-- row lock and decides on the latest row version; the instance is a
-- request row, inserted only when it granted. Arguments as fast_acquire's;
-- the row returned as fast_acquire's, then the readers the identifier has
-- with this one (the driver sends its next reader here first while that
-- is more than one: Driver.joined).
WITH li AS (
    INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p)
    VALUES ($1, $2, $3, {now}, $4, $5, 0)
    ON CONFLICT (kind, ns, name) DO UPDATE
       SET fence = li.fence + 1, n_r = li.n_r + excluded.n_r, n_w = li.n_w + excluded.n_w
     WHERE li.n_p = 0 AND li.n_w = 0 AND (excluded.n_w = 0 OR li.n_r = 0) AND NOT li.gated
    RETURNING fence, n_r)
INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
SELECT $6, $7, $1, $2, $3, $8, 'G', $9, li.fence, {now}, {now} FROM li
RETURNING id, token, (SELECT id FROM {p}incarnation), (SELECT n_r FROM li);

-- only postgres: crash recovery empties the lock state.
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

-- only postgres: fast_acquire_many without the PL/pgSQL call.
-- name: fast_acquire_many_free
-- Several names of one namespace at once when every one is free, as one
-- plain statement (no PL/pgSQL call): each name's conditional upsert of
-- fast_acquire, none tried when any of them is taken (the same unlocked
-- read first). Rows: the names granted, as fast_acquire_many's. A name
-- taken between that read and its upsert is refused alone, and the
-- caller releases the others (LockFastAcquireMany). Arguments as
-- fast_acquire's, with the names as an array.
WITH x AS (SELECT {now} AS t),
li AS (
    INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p, h_id, h_session, h_client, h_mode, h_call, h_token, h_at)
    SELECT $1::smallint, $2::bytea, u.name, x.t, $4::bigint, $5::bigint, 0, nextval('{p}lock_requests_id_seq'),
           $6::text, $7::text, $8::text, $9::bigint, x.t, x.t
      FROM unnest($3::bytea[]) AS u(name), x
     WHERE NOT EXISTS (SELECT 1 FROM {p}lock_idents b
                        WHERE b.kind = $1 AND b.ns = $2 AND b.name = ANY ($3::bytea[])
                          AND (b.n_r <> 0 OR b.n_w <> 0 OR b.n_p <> 0 OR b.gated))
    ON CONFLICT (kind, ns, name) DO UPDATE
       SET fence = li.fence + 1, n_r = excluded.n_r, n_w = excluded.n_w,
           h_id = excluded.h_id, h_session = excluded.h_session, h_client = excluded.h_client,
           h_mode = excluded.h_mode, h_call = excluded.h_call, h_token = li.fence + 1, h_at = excluded.h_at
     WHERE li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0 AND NOT li.gated
    RETURNING li.name, li.h_id, li.h_token)
SELECT li.name, li.h_id, li.h_token, (SELECT id FROM {p}incarnation), true FROM li;

-- only postgres: fast_acquire_many as a plain UPDATE.
-- name: fast_acquire_many_existing
-- fast_acquire_many_free as fast_acquire_existing is fast_acquire: for
-- names whose rows the driver has seen, one plain UPDATE of the free rows
-- when no row of the names is taken. Rows as fast_acquire_many_free's;
-- fewer than the names when a row is missing (deleted by the upkeep) or
-- was taken meanwhile, and the caller then releases those granted and
-- runs fast_acquire_many_free (LockFastAcquireMany). The rows are locked
-- in the primary key's order, as every multi-name call locks them.
WITH li AS (
    UPDATE {p}lock_idents li
       SET fence = li.fence + 1, n_r = $4::bigint, n_w = $5::bigint, h_id = nextval('{p}lock_requests_id_seq'),
           h_session = $6::text, h_client = $7::text, h_mode = $8::text, h_call = $9::bigint, h_token = li.fence + 1,
           h_at = {now}, inc = COALESCE(li.inc, (SELECT id FROM {p}incarnation))
     WHERE li.kind = $1::smallint AND li.ns = $2::bytea AND li.name = ANY ($3::bytea[])
       AND li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0 AND NOT li.gated
       AND NOT EXISTS (SELECT 1 FROM {p}lock_idents b
                        WHERE b.kind = $1 AND b.ns = $2 AND b.name = ANY ($3::bytea[])
                          AND (b.n_r <> 0 OR b.n_w <> 0 OR b.n_p <> 0 OR b.gated))
    RETURNING li.name, li.h_id, li.h_token, li.inc)
SELECT li.name, li.h_id, li.h_token, li.inc, true FROM li;

-- only postgres, mysql: many names of a namespace at once.
-- name: fast_acquire_many
-- Several names of one namespace at once, all or none: see
-- {p}fast_acquire_many (migration 011).
SELECT o_name, o_id, o_token, o_incarnation, o_inline FROM {p}fast_acquire_many($1::smallint, $2, $3::bytea[], $4, $5, $6, $7, $8, $9);

-- only postgres, mysql: the turnstile and the lock in one round trip.
-- name: turnstile_acquire
-- A contended write lock through its turnstile, on the session's line,
-- as one plain statement: {p}turnstile_take (migration 032) without the
-- PL/pgSQL call, whose statements cost the server 15-25% more per grant
-- with 8 sessions on one lock (docs/benchmarks.md, "PostgreSQL: the
-- turnstile's take as one plain statement"); the function stays for
-- clients of before this statement. The CASE runs its conditions in
-- order and stops at the first true one: the turnstile at once when free
-- (got 1), else nothing when the call tries once (0), else the wait,
-- bounded by lock_timeout for the wait alone (set for the statement's
-- transaction only, then put back to p's value: p is MATERIALIZED, read
-- before the CASE runs; inlined, current_setting ran where p.prev
-- stands, after the first set_config, and the upsert waited under the
-- wait's timeout), and then got 2. w is read by two
-- parts of the statement and calls volatile functions, so it is computed
-- once, before the upsert, which then waits for the releasing
-- transaction's commit and decides on the row it wrote (fast_acquire's
-- ON CONFLICT clause: TestTurnstileTakeFollowsFastPath). Arguments:
-- kind, namespace, name, the turnstile's two keys, the longest wait in
-- milliseconds, session, client, call. A wait that runs out fails with
-- lock_not_available (55P03); turnstile_held then says whether the
-- turnstile came anyway. Row: the holder id and token (NULL: not
-- granted), the incarnation, whether the turnstile is held, whether it
-- was not free at once.
WITH p AS MATERIALIZED (SELECT current_setting('lock_timeout') AS prev),
w AS (
    SELECT CASE WHEN pg_try_advisory_lock($4::integer, $5::integer) THEN 1
                WHEN $6::integer <= 0 THEN 0
                WHEN set_config('lock_timeout', $6::integer || 'ms', true) IS NULL THEN NULL
                WHEN pg_advisory_lock($4::integer, $5::integer)::text IS NULL THEN NULL
                WHEN set_config('lock_timeout', p.prev, true) IS NULL THEN NULL
                ELSE 2
           END AS got
      FROM p),
x AS (SELECT {now} AS t),
li AS (
    INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p, h_id, h_session, h_client, h_mode, h_call, h_token, h_at)
    SELECT $1::smallint, $2::bytea, $3::bytea, x.t, 0, 1, 0, nextval('{p}lock_requests_id_seq'),
           $7::text, $8::text, 'W', $9::bigint, x.t, x.t
      FROM w, x
     WHERE w.got > 0
    ON CONFLICT (kind, ns, name) DO UPDATE
       SET fence = li.fence + 1, n_r = excluded.n_r, n_w = excluded.n_w,
           h_id = excluded.h_id, h_session = excluded.h_session, h_client = excluded.h_client,
           h_mode = excluded.h_mode, h_call = excluded.h_call, h_token = li.fence + 1, h_at = excluded.h_at
     WHERE li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0 AND NOT li.gated
    RETURNING li.h_id, li.h_token)
SELECT li.h_id, li.h_token, (SELECT id FROM {p}incarnation), w.got > 0, w.got <> 1
  FROM w LEFT JOIN li ON true;

-- only postgres: the turnstile is an advisory lock, read from pg_locks.
-- name: turnstile_held
-- Whether this connection holds the two-key advisory lock ($1, $2): a
-- turnstile's wait that ran out as the lock came reports lock_not_available
-- with the lock held (pg_locks shows the keys as unsigned).
SELECT EXISTS (SELECT 1 FROM pg_locks l
                WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.granted
                  AND l.objsubid = 2 AND l.classid::bigint = ($1::bigint + 4294967296) % 4294967296
                  AND l.objid::bigint = ($2::bigint + 4294967296) % 4294967296);

-- only postgres: the slow path's request in one PL/pgSQL call.
-- name: request
-- The slow path of one lock request in one call: see {p}request
-- (migration 018).
SELECT o_id, o_status, o_token FROM {p}request($1::smallint, $2, $3, $4, $5, $6, $7, $8);

-- only postgres: the release and hand-off in PL/pgSQL (MySQL: release_call).
-- name: release_name
-- The release of the session's instances of one name (all, or the newest
-- $5) and the hand-off to waiters, in one pass (migration 026), for a
-- session that may have request rows: $1 session, $2 kind, $3 namespace,
-- $4 name, $5 limit (NULL: all), $6 the NOTIFY channel. One row: the
-- number released, the grants made (payload entries, '' for none) and
-- the names someone waited on (FastReleaseParams.Contended).
SELECT o_released, o_grants, CASE WHEN o_np > 0 THEN ARRAY[$4::bytea] ELSE '{}'::bytea[] END
  FROM {p}release_name($2::smallint, $3, $4, $1, $5, false, $6);

-- only postgres: the release and hand-off in PL/pgSQL (MySQL: release_call).
-- name: release_ns
-- release_name for every name of the namespace the session has an
-- instance of, in name order (the order in which multi-name calls lock
-- rows): $1 session, $2 kind, $3 namespace, $4 the NOTIFY channel. One
-- row, as release_name's.
SELECT coalesce(sum(r.o_released), 0), coalesce(string_agg(nullif(r.o_grants, ''), ','), ''),
       coalesce(array_agg(x.name) FILTER (WHERE r.o_np > 0), '{}')
  FROM (SELECT li.name FROM {p}lock_idents li WHERE li.kind = $2 AND li.ns = $3 AND li.h_session = $1
        UNION
        SELECT q.name FROM {p}lock_requests q WHERE q.session_id = $1 AND q.kind = $2 AND q.ns = $3 AND q.status = 'G'
        ORDER BY 1) x
 CROSS JOIN LATERAL {p}release_name($2::smallint, $3, x.name, $1, NULL, false, $4) r;

-- only postgres: a reader's release in one statement.
-- name: release_rows
-- The release of a session's request rows by the one name in scope that
-- can hold them (FastReleaseParams.RowsOn: the session's instances
-- elsewhere in scope are inline holders), in one statement that takes the
-- lock row last and holds it only for its own update: release_ns and
-- release_name lock it first and keep it through a PL/pgSQL call (with 8
-- readers on one lock the statements alone ran 60-75% faster so, the
-- engine's readers8 35-50%; docs/benchmarks.md, "PostgreSQL: a reader's
-- release in one statement"). $1 session, $2 kind, $3 namespace,
-- $4 the name, $5 the NOTIFY channel. The delete counts only the rows it
-- deleted, and the update applies those counts to the row's latest
-- version, so the counters stay exact whatever committed meanwhile (on
-- PostgreSQL an inline holder never becomes a request row, and only the
-- session's own calls make its rows). No row when it released nothing,
-- or when the session holds an inline holder in the namespace (which this
-- statement does not release): the caller then runs release_ns or
-- release_name. Otherwise one row: the instances released, the waiters,
-- and the grants {p}regrant_grants made when there are waiters (it reads
-- the requests after this statement's delete: a volatile function sees
-- the changes of the statement that calls it, and the update reads the
-- delete's counts before it runs).
WITH d AS (
    DELETE FROM {p}lock_requests q
     WHERE q.session_id = $1 AND q.kind = $2 AND q.ns = $3 AND q.name = $4 AND q.status = 'G'
       AND NOT EXISTS (SELECT 1 FROM {p}lock_idents i WHERE i.kind = $2 AND i.ns = $3 AND i.h_session = $1)
    RETURNING q.mode),
c AS (SELECT count(*) FILTER (WHERE d.mode = 'R') AS d_r, count(*) FILTER (WHERE d.mode = 'W') AS d_w FROM d)
UPDATE {p}lock_idents li
   SET n_r = li.n_r - c.d_r, n_w = li.n_w - c.d_w
  FROM c
 WHERE li.kind = $2 AND li.ns = $3 AND li.name = $4 AND c.d_r + c.d_w > 0
RETURNING c.d_r + c.d_w, li.n_p, CASE WHEN li.n_p > 0 THEN {p}regrant_grants(li.kind, li.ns, li.name, $5) END;

-- only postgres: the release of inline holders with their hand-off.
-- name: release_inline
-- The release by a session whose every instance is an inline holder
-- (FastReleaseParams.InlineOnly; one instance per name, so no limit): one
-- update of its lock rows of the namespace (locked in the primary key's
-- order, name order, as multi-name calls lock them), each row someone
-- waits on handed on by {p}regrant_grants as it is released. $1 session,
-- $2 kind, $3 namespace, $4 the NOTIFY channel. A row per name released:
-- its name, its waiters (n_p), its grants. (A plain pass and then
-- {p}release_name over the contended names would lock those after the
-- rest, out of that order; a WITH around the update to return one row as
-- release_name does cost 5-8% of a contended grant's rate:
-- docs/benchmarks.md, "The turnstile's statements without a
-- subtransaction".)
UPDATE {p}lock_idents li
   SET n_r = li.n_r - (li.h_mode = 'R')::int, n_w = li.n_w - (li.h_mode = 'W')::int,
       h_id = NULL, h_session = NULL
 WHERE li.kind = $2 AND li.ns = $3 AND li.h_session = $1
RETURNING li.name, li.n_p, CASE WHEN li.n_p > 0 THEN {p}regrant_grants(li.kind, li.ns, li.name, $4) END;

-- only sqlite, postgres: MySQL's inline holders are in {p}lock_fast.
-- name: release_inline_name
-- release_inline for one name: $1 session, $2 kind, $3 namespace, $4
-- name, $5 the NOTIFY channel. A query of its own: one that took the name
-- as "$4 IS NULL OR name = $4" had a generic plan that read every lock
-- row (a sequential scan: 6.3 ms with 20,000 rows, against 0.05 ms by the
-- primary key; TestReleaseInlineNameByKey).
UPDATE {p}lock_idents li
   SET n_r = li.n_r - (li.h_mode = 'R')::int, n_w = li.n_w - (li.h_mode = 'W')::int,
       h_id = NULL, h_session = NULL
 WHERE li.kind = $2 AND li.ns = $3 AND li.name = $4 AND li.h_session = $1
RETURNING li.name, li.n_p, CASE WHEN li.n_p > 0 THEN {p}regrant_grants(li.kind, li.ns, li.name, $5) END;

-- only postgres: the hand-off in PL/pgSQL (MySQL: regrant_call).
-- name: regrant
SELECT {p}regrant_grants($1::smallint, $2, $3, $4);

-- only postgres, mysql: SQLite has no stored routines.
-- name: remove_call
-- Migration 039: requests withdrawn ($1 their ids) and their identifiers
-- ($2 kinds, $3 namespaces, $4 names: distinct, sorted) handed on, the
-- grants returned as {p}regrant_grants returns them ($5 the channel).
SELECT {p}remove_requests($1::bigint[], $2::smallint[], $3::bytea[], $4::bytea[], $5);

-- only postgres, mysql: SQLite has no stored routines.
-- name: withdraw_call
-- Migration 039: a lock call's requests withdrawn ($1 session, $2 call,
-- $3 kind, $4 namespace, $5 its names, sorted) and their identifiers
-- handed on, the grants returned as remove_call returns them ($6 the
-- channel).
SELECT {p}withdraw_call($1, $2, $3::smallint, $4, $5::bytea[], $6);

-- only postgres, mysql: SQLite has no stored routines.
-- name: settle_call
-- Migration 040: withdraw_call for a call that may still run, the
-- identifiers' rows made when missing and locked first; same arguments
-- and answer.
SELECT {p}settle_call($1, $2, $3::smallint, $4, $5::bytea[], $6);

-- ---- transaction-scoped locks (migration 020) ----

-- only postgres, mysql: gates are row flags (SQLite's: the write lock).
-- name: tx_prepare
-- Marks the identifier gated (creating its row), committed before the
-- caller's transaction takes the gate; writes nothing when it is already.
INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p, gated)
VALUES ($1, $2, $3, {now}, 0, 0, 0, true)
ON CONFLICT (kind, ns, name) DO UPDATE SET gated = true WHERE NOT li.gated;

-- only sqlite, postgres: MySQL builds the gate's locking reads in txlocks.go.
-- name: tx_gate
-- In the caller's transaction: its gate, see {p}tx_gate.
SELECT {p}tx_gate($1::smallint, $2::bytea, $3::bytea, $4::text, $5::integer, $6::boolean);

-- only postgres: a gate is an advisory lock.
-- name: tx_gate_held
SELECT coalesce({p}gate_held($1::smallint, $2::bytea, $3::bytea), '');

-- only postgres, mysql: gates are row flags (SQLite's: the write lock).
-- name: request_statuses_gated
-- request_statuses, and whether each request's identifier is gated (a
-- key lookup each): the client's poll of its waiting requests, one
-- statement per interval, also finds those a transaction's gate holds up
-- (driver.GatedStatuses).
SELECT r.id, r.session_id, r.client_id, r.kind, r.ns, r.name, r.mode, r.status, r.call_id, r.token, r.created_at, r.granted_at,
       COALESCE((SELECT i.gated FROM {p}lock_idents i WHERE i.kind = r.kind AND i.ns = r.ns AND i.name = r.name), false)
  FROM {p}lock_holds r WHERE r.id IN ({list});

-- only postgres, mysql: gates are row flags (SQLite's: the write lock).
-- name: tx_gated_among
-- The gated identifiers among some (TxGatedAmong): {keys} stands for one
-- "(kind = ? AND ns = ? AND name = ?)" per identifier, joined by OR (a key
-- lookup each).
SELECT kind, ns, name FROM {p}lock_idents WHERE gated AND ({keys});

-- only postgres: a gate is an advisory lock, read from pg_locks.
-- name: tx_holds
-- The gates transactions hold or wait for, from pg_locks (an advisory
-- lock on a bigint key: classid its high half, objid its low half,
-- objsubid 1), matched to the gated identifiers' keys.
SELECT li.kind, li.ns, li.name, CASE WHEN l.mode = 'ExclusiveLock' THEN 'W' ELSE 'R' END,
       CASE WHEN l.granted THEN 'G' ELSE 'P' END, 'tx ' || l.virtualtransaction,
       coalesce(host(a.client_addr), 'local'), l.pid, coalesce(a.application_name, ''),
       (extract(epoch from coalesce(a.xact_start, now())) * 1000000)::bigint
  FROM (SELECT kind, ns, name, {p}gate_key(kind, ns, name) AS key FROM {p}lock_idents WHERE gated) li
  JOIN pg_locks l ON l.locktype = 'advisory' AND l.objsubid = 1
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND l.classid::bigint = (li.key >> 32) & 4294967295 AND l.objid::bigint = li.key & 4294967295
  LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.pid <> pg_backend_pid()
 ORDER BY li.kind, li.ns, li.name, l.granted DESC, l.pid;

-- name: turnstile_wait_mark
-- A contender waiting behind a turnstile past its first 25 ms, for
-- monitoring (migration 029): $1 session, $2 call, $3 the row's id
-- (negative, as an inline holder's), $4 client, $5 kind, $6 namespace,
-- $7 name.
INSERT INTO {p}lock_waits (session_id, call_id, id, client_id, kind, ns, name, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, {now})
ON CONFLICT (session_id, call_id) DO NOTHING;

-- name: turnstile_wait_unmark
DELETE FROM {p}lock_waits WHERE session_id = $1 AND call_id = $2;

-- name: turnstile_waits_purge
-- The marks of sessions that are gone (a process that died waiting).
DELETE FROM {p}lock_waits w WHERE NOT EXISTS (SELECT 1 FROM {p}sessions s WHERE s.id = w.session_id);
