-- MySQL/MariaDB's own queries: the ones no other dialect has, because they
-- use what only MySQL/MariaDB offers (the engine uses a query of this file only
-- where the dialect has it, or this driver's own code does). queries.sql
-- holds the queries every dialect has, under the same names
-- (driver/queries_test.go checks both rules).

-- name: ident_waiting
SELECT n_p FROM {p}lock_idents WHERE kind = ? AND ns = ? AND name = ?;

-- name: notify_insert
INSERT INTO {p}notifications (channel, payload, created_at) VALUES (?, ?, {now});


-- ---- transaction-scoped locks (migration 020) ----
-- The gate's locking reads are built in txlocks.go (MariaDB and MySQL
-- spell a shared NOWAIT lock differently).

-- name: tx_prepare
-- Marks the identifier gated (creating its mutex row, migration 043);
-- affected rows 0 when it was already.
INSERT INTO {p}lock_mutex (kind, ns, name, gated) VALUES (?, ?, ?, 1)
ON DUPLICATE KEY UPDATE gated = 1;

-- name: tx_gate_exists
-- Not a locking read: a transaction may hold the row.
SELECT count(*) FROM {p}lock_gates WHERE kind = ? AND ns = ? AND name = ?;

-- name: tx_gate_ensure
-- Only when tx_gate_exists found nothing: on an existing row INSERT IGNORE
-- takes a shared lock, which waits for a transaction holding the gate.
INSERT IGNORE INTO {p}lock_gates (kind, ns, name) VALUES (?, ?, ?);

-- name: request_statuses_gated
-- request_statuses, and whether each request's identifier is gated (a
-- key lookup each): the client's poll of its waiting requests, one
-- statement per interval, also finds those a transaction's gate holds up
-- (driver.GatedStatuses).
SELECT r.id, r.session_id, r.client_id, r.kind, r.ns, r.name, r.mode, r.status, r.call_id, r.token, r.created_at, r.granted_at,
       COALESCE((SELECT m.gated FROM {p}lock_mutex m WHERE m.kind = r.kind AND m.ns = r.ns AND m.name = r.name), 0) <> 0
  FROM {p}lock_requests r WHERE r.id IN ({list});

-- name: tx_gated_among
-- The gated identifiers among some (TxGatedAmong): {keys} stands for one
-- "(kind = ? AND ns = ? AND name = ?)" per identifier, joined by OR (a key
-- lookup each).
SELECT kind, ns, name FROM {p}lock_mutex WHERE gated <> 0 AND ({keys});

-- name: tx_hold_insert
-- In the caller's transaction: its hold, which other connections see only
-- reading uncommitted rows while the transaction runs; once it commits the
-- row is an ordinary one, of an ended transaction (see TxHolds).
INSERT INTO {p}lock_txholds (kind, ns, name, mode, txn, host, pid, owner, since)
VALUES (?, ?, ?, ?, CONNECTION_ID(), ?, ?, ?, {now});

-- name: tx_holds_all
SELECT id, kind, ns, name, mode, 'G', CONCAT('tx ', txn), host, pid, owner, since FROM {p}lock_txholds ORDER BY id;

-- name: tx_holds_ended
-- Read committed: the holds of transactions that ended.
SELECT id FROM {p}lock_txholds ORDER BY id LIMIT 1000;

-- name: tx_holds_delete
-- As request_delete (queries.sql): "id IN (...)" read every row once the
-- list was about as long as the table's estimate, and waited for the
-- running transactions' holds (TestTxHoldsPurgeSkipsRunning).
DELETE h FROM JSON_TABLE(JSON_ARRAY({list}), '$[*]' COLUMNS (id bigint PATH '$')) x
  STRAIGHT_JOIN {p}lock_txholds h FORCE INDEX (PRIMARY) ON h.id = x.id;


-- ---- uncontended locks in MEMORY (migration 023) ----
-- {p}lock_fast's statements. A row with slow = 0 is only ever changed by
-- one statement at a time (the MEMORY table's lock) and only by these
-- fast statements; a row with slow = 1 only under the identifier's InnoDB
-- row lock.
--
-- A statement that changes several rows scans the index whose key it
-- changes (FORCE INDEX), so that the server collects the rows before it
-- changes any. MariaDB's MEMORY engine loses its place in a B-tree scan
-- when the statement changes another B-tree index of the row it is on:
-- walking the primary key, a release that cleared h_session skipped the
-- session's next holder (a probe on MariaDB 10.11: a few releases in a
-- thousand, and nearly every one after a DELETE on the table, left a
-- holder behind). A change of one row found by its whole primary key has
-- no scan to lose its place in.

-- name: fast_acquire
-- Grants the identifier to a new fast holder when the row is missing or
-- free (slow = 0, no holder) and the session's incarnation is the lock
-- state's: affected rows 1 (created) or 2 (taken), 0 when refused. The new
-- fence is the statement's insert id (LAST_INSERT_ID(expr): the update's
-- when it took the row). The holder's condition is evaluated on unchanged
-- columns: h_id, which it reads, is assigned last.
-- Arguments: kind, ns, name, holder id, session, client, mode, call id,
-- then the session's incarnation twice (0: not checked, for drivertest).
-- Migration 031's turnstile_acquire carries a copy (kept in step by
-- TestTurnstileProceduresFollowFastPath).
INSERT INTO {p}lock_fast (kind, ns, name, fence, slow, h_id, h_session, h_client, h_mode, h_call, h_at)
SELECT ?, ?, ?, LAST_INSERT_ID({now}), 0, ?, ?, ?, ?, ?, {now} FROM {p}incarnation WHERE id = ? OR ? = 0
ON DUPLICATE KEY UPDATE
    fence     = IF(slow = 0 AND h_id IS NULL, LAST_INSERT_ID(fence + 1), fence),
    h_session = IF(slow = 0 AND h_id IS NULL, VALUES(h_session), h_session),
    h_client  = IF(slow = 0 AND h_id IS NULL, VALUES(h_client), h_client),
    h_mode    = IF(slow = 0 AND h_id IS NULL, VALUES(h_mode), h_mode),
    h_call    = IF(slow = 0 AND h_id IS NULL, VALUES(h_call), h_call),
    h_at      = IF(slow = 0 AND h_id IS NULL, VALUES(h_at), h_at),
    h_id      = IF(slow = 0 AND h_id IS NULL, VALUES(h_id), h_id);

-- name: fast_conflict_held
-- Whether another session than the one given holds the identifier (kind,
-- namespace, name) by the fast path in a mode that conflicts with the one
-- given (lock_conflict_held reads both tables).
SELECT EXISTS (SELECT 1 FROM {p}lock_fast
                WHERE kind = ? AND ns = ? AND name = ? AND h_id IS NOT NULL
                  AND h_session <> ? AND (h_mode = 'W' OR ? = 'W'));

-- name: fast_acquire_many
-- fast_acquire for several names of one namespace; {rows} are the names
-- and their holder ids (Driver.manyText): on MariaDB picked by position
-- from the Sequence engine's seq_1_to_N, the names' bind variables and
-- then the ids'; without that engine, and on MySQL, one "SELECT ? AS
-- name, ? AS hid" per name joined by UNION ALL, which the server builds
-- as a temporary table (15-20% of a ten-name acquire and release on
-- MariaDB: BenchmarkMulti10Bound; docs/benchmarks.md, "MariaDB: many
-- names without a derived table"). MariaDB returns the grants (RETURNING);
-- MySQL reads them back with fast_granted. Arguments: kind, ns, session,
-- client, mode, call id, {rows}', incarnation twice.
INSERT INTO {p}lock_fast (kind, ns, name, fence, slow, h_id, h_session, h_client, h_mode, h_call, h_at)
SELECT ?, ?, v.name, {now}, 0, v.hid, ?, ?, ?, ?, {now}
  FROM ({rows}) v JOIN {p}incarnation i ON i.id = ? OR ? = 0
ON DUPLICATE KEY UPDATE
    fence     = IF(slow = 0 AND h_id IS NULL, fence + 1, fence),
    h_session = IF(slow = 0 AND h_id IS NULL, VALUES(h_session), h_session),
    h_client  = IF(slow = 0 AND h_id IS NULL, VALUES(h_client), h_client),
    h_mode    = IF(slow = 0 AND h_id IS NULL, VALUES(h_mode), h_mode),
    h_call    = IF(slow = 0 AND h_id IS NULL, VALUES(h_call), h_call),
    h_at      = IF(slow = 0 AND h_id IS NULL, VALUES(h_at), h_at),
    h_id      = IF(slow = 0 AND h_id IS NULL, VALUES(h_id), h_id);

-- name: fast_granted
-- The fast holders of one call: session, kind, ns, call id.
SELECT name, h_id, fence FROM {p}lock_fast
 WHERE h_session = ? AND kind = ? AND ns = ? AND h_call = ? AND slow = 0;

-- name: fast_undo
-- Withdraws the fast holders of one call (fast_acquire_many granted only
-- some): session, kind, ns, call id.
UPDATE {p}lock_fast FORCE INDEX (lock_fast_session)
   SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
 WHERE h_session = ? AND kind = ? AND ns = ? AND h_call = ? AND slow = 0;

-- name: fast_release_name
-- Releases the session's fast holder of one identifier. A holder the slow
-- path owns (slow = 1; adopted ones keep h_session, see fast_adopted)
-- stays, and sets the insert id (its h_session is assigned itself): 3
-- when it may not be adopted yet (h_id set), else 1, unless a row before
-- it in the statement set 3 (LAST_INSERT_ID() reads the value the
-- statement set last; a 3 left by an earlier statement only costs a
-- look). The caller then releases through InnoDB, adopting first on a 3.
-- Arguments: session, kind, ns, name. Migration 031's turnstile_release
-- carries a copy (kept in step by TestTurnstileProceduresFollowFastPath).
UPDATE {p}lock_fast
   SET h_session = IF(slow = 0, NULL, IF(LAST_INSERT_ID(IF(h_id IS NOT NULL, 3, IF(LAST_INSERT_ID() = 3, 3, 1))) > 0, h_session, h_session)),
       h_id = IF(slow = 0, NULL, h_id), h_client = IF(slow = 0, NULL, h_client),
       h_mode = IF(slow = 0, NULL, h_mode), h_call = IF(slow = 0, NULL, h_call), h_at = IF(slow = 0, NULL, h_at)
 WHERE h_session = ? AND kind = ? AND ns = ? AND name = ?;

-- name: fast_release_ns
-- fast_release_name for every identifier of a namespace: session, kind,
-- ns. (FORCE INDEX: see the section's head.) Migration 034's
-- turnstile_release_ns carries a copy (TestTurnstileProceduresFollowFastPath).
UPDATE {p}lock_fast FORCE INDEX (lock_fast_session)
   SET h_session = IF(slow = 0, NULL, IF(LAST_INSERT_ID(IF(h_id IS NOT NULL, 3, IF(LAST_INSERT_ID() = 3, 3, 1))) > 0, h_session, h_session)),
       h_id = IF(slow = 0, NULL, h_id), h_client = IF(slow = 0, NULL, h_client),
       h_mode = IF(slow = 0, NULL, h_mode), h_call = IF(slow = 0, NULL, h_call), h_at = IF(slow = 0, NULL, h_at)
 WHERE h_session = ? AND kind = ? AND ns = ?;

-- name: fast_engage
-- Under the identifier's InnoDB row lock: the slow path owns the
-- identifier from now on. A new row's fence is 0: only fast grants move
-- it, and a demotion sets it to the InnoDB one. The insert id is 1 when
-- there may be more to do (fast_holder): a fast holder (adopted ones are
-- cleared once their adoption committed), or a fence above the InnoDB one
-- (the last argument); 0 otherwise, as for a new row. Arguments: kind,
-- ns, name, the InnoDB fence.
--
-- No statement that writes {p}lock_fast reads an InnoDB table: it would
-- hold the MEMORY table's lock while its read waited for a row lock,
-- which the waiting transaction's holder may need the table to release.
INSERT INTO {p}lock_fast (kind, ns, name, fence, slow) VALUES (?, ?, ?, 0, 1)
ON DUPLICATE KEY UPDATE slow = IF(LAST_INSERT_ID(h_id IS NOT NULL OR fence > ?) >= 0, 1, 1);

-- name: fast_holder
-- The row fast_engage left: no fast statement changes it any more.
SELECT fence, h_id, h_session, h_client, h_mode, h_call, h_at FROM {p}lock_fast
 WHERE kind = ? AND ns = ? AND name = ?;

-- name: fast_adopt
-- The fast holder as a request row under its own id; affected rows 0 when
-- it is one already.
INSERT IGNORE INTO {p}lock_requests (id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
VALUES (?, ?, ?, ?, ?, ?, ?, 'G', ?, ?, ?, ?);

-- name: fast_clear_ids
-- Fast holders ({list} of ids) whose request rows are gone: in the
-- transaction that deletes the rows, before its commit (a holder left
-- behind would be adopted again).
UPDATE {p}lock_fast FORCE INDEX (lock_fast_holder)
   SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
 WHERE h_id IN ({list}) AND slow = 1;

-- name: fast_adopted
-- Fast holders ({list} of ids) whose adoption committed: h_id goes (later
-- adoptions need not look), h_session stays, so that the holder's own
-- release knows to go through InnoDB (fast_release_*), until that release
-- clears it ({p}release_instances, migration 038) or the row is handed
-- back.
UPDATE {p}lock_fast FORCE INDEX (lock_fast_holder) SET h_id = NULL WHERE h_id IN ({list}) AND slow = 1;

-- name: fast_idle_slow
-- Identifiers the slow path owns with no fast holder: candidates to hand
-- back to the fast path (fast_demote).
SELECT kind, ns, name FROM {p}lock_fast WHERE slow = 1 AND h_id IS NULL LIMIT 200;

-- name: fast_demote_free
-- Without a lock: 1 when the identifier's counters say nothing of it is
-- left in InnoDB and the slow path owns it with no fast holder left
-- (fast_demote_check then decides under the row lock, and fast_demote
-- changes only such a row), 0 otherwise or when a row is gone: a
-- session's re-entry refused by its own fast holder (a turnstile's
-- acquire) costs this read, not the locking transaction too.
SELECT COUNT(*) FROM {p}lock_idents li
 WHERE li.kind = ? AND li.ns = ? AND li.name = ? AND li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0
   AND NOT EXISTS (SELECT 1 FROM {p}lock_mutex m WHERE m.kind = li.kind AND m.ns = li.ns AND m.name = li.name AND m.gated <> 0)
   AND EXISTS (SELECT 1 FROM {p}lock_fast f
                WHERE f.kind = li.kind AND f.ns = li.ns AND f.name = li.name AND f.slow = 1 AND f.h_id IS NULL);

-- name: fast_demote_check
-- Under the identifier's mutex (ident_lock): its fence when nothing of it
-- is left to the slow path (no holder, no waiter, no gate); no row
-- otherwise. A plain read: the mutex keeps the rows as they are.
SELECT li.fence FROM {p}lock_idents li
 WHERE li.kind = ? AND li.ns = ? AND li.name = ? AND li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0
   AND NOT EXISTS (SELECT 1 FROM {p}lock_mutex m WHERE m.kind = li.kind AND m.ns = li.ns AND m.name = li.name AND m.gated <> 0)
   AND NOT EXISTS (SELECT 1 FROM {p}lock_requests r WHERE r.kind = li.kind AND r.ns = li.ns AND r.name = li.name);

-- name: fast_demote
-- The fast path owns the identifier again: fence (from InnoDB), kind, ns,
-- name.
UPDATE {p}lock_fast
   SET slow = 0, fence = GREATEST(fence, ?), h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
 WHERE kind = ? AND ns = ? AND name = ? AND slow = 1 AND h_id IS NULL;

-- name: fast_purge_idle
-- Free rows whose counter is more than a second behind the clock (a row
-- made again later starts at the clock, above every token it gave).
DELETE FROM {p}lock_fast WHERE slow = 0 AND h_id IS NULL AND fence < {now} - 1000000;

-- name: incarnation_lease
-- Records a lease in use: the longest is how long a new incarnation waits.
INSERT INTO {p}meta (k, v) VALUES ('max_lease_us', ?) ON DUPLICATE KEY UPDATE v = GREATEST(v, VALUES(v));

-- name: incarnation_get
SELECT id, GREATEST(0, lockable_from - {now}) FROM {p}incarnation;

-- name: incarnation_slow_idents
-- Before a new incarnation: identifiers a restart left state for, which
-- the caller marks as the slow path's (fast_engage): the gated ones (a
-- restart empties the MEMORY lock state, migration 043, but not the
-- mutex rows' gated flags), and any the slow path holds or waits for
-- (none after a restart; the first incarnation of a schema whose lock
-- state was InnoDB's had them).
SELECT kind, ns, name FROM {p}lock_mutex WHERE gated = 1
UNION
SELECT kind, ns, name FROM {p}lock_idents WHERE n_r > 0 OR n_w > 0 OR n_p > 0;

-- name: incarnation_seed_requests
-- Before a new incarnation: request ids start above every id handed out
-- before it (a restart empties {p}lock_requests and starts its
-- AUTO_INCREMENT again, migration 043; a client still waiting on an old
-- id must not read a new request as its own). A row with the clock's
-- microseconds as its id, which incarnation_seed_done deletes: MEMORY
-- tables keep their counter when rows are deleted.
INSERT IGNORE INTO {p}lock_requests (id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at)
SELECT {now}, '', '', 0, '', '', 'W', 'D', 0, 0, 0 FROM DUAL
 WHERE {now} > (SELECT COALESCE(MAX(id), 0) FROM {p}lock_requests);

-- name: incarnation_seed_done
DELETE FROM {p}lock_requests WHERE session_id = '' AND client_id = '';

-- name: purge_ident
-- One idle identifier deleted under its mutex (ident_purge_idle lists
-- them): one row, 1 when it went.
CALL {p}purge_ident(?, ?, ?);

-- name: incarnation_max_lease
SELECT COALESCE(MAX(v), 0) FROM {p}meta WHERE k = 'max_lease_us';

-- name: incarnation_new
-- A new incarnation, lockable once the longest lease in use (the
-- argument) has passed. LOW_PRIORITY: the write waits for the statements
-- reading the table (session_renew, which may itself wait for a row lock)
-- without holding up later readers.
INSERT LOW_PRIORITY IGNORE INTO {p}incarnation (one, id, lockable_from) VALUES (1, {now}, {now} + ?);

-- name: request_call
-- Migrations 024 and 033: the slow path's request in one call (kind, ns,
-- name, session, client, mode, call id, try-once, incarnation or NULL),
-- committed by the call. One row: outcome, id, token, the fast holder it
-- found.
CALL {p}request_commit(?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: reentry_call
-- Migration 042: request_call for a request the engine believes the
-- session's instances cover (driver.RequestParams.Covered): granted in a
-- few statements when they do, request_call's outcome otherwise; same
-- arguments and row.
CALL {p}request_reentry(?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: release_call
-- Migration 038: the release of the session's instances of a name, or of
-- a namespace (name NULL), through InnoDB with its hand-on, committed by
-- the call (session, kind, ns, name, fast_release_*'s signal, the limit:
-- 0 for every instance). One row: the instances released, the
-- identifiers and the grants, as JSON arrays (releaseSlow in
-- fastlocks.go reads them).
CALL {p}release_instances(?, ?, ?, ?, ?, ?);

-- name: remove_call
-- Migration 039: the withdrawal of requests (a JSON array of [id, kind,
-- hex namespace, hex name], sorted by identifier) with the hand-on,
-- committed by the call. One row: the requests deleted, the identifiers
-- and the grants, as JSON arrays (LockRequestsRemove in fastlocks.go
-- reads them).
CALL {p}remove_requests(?);

-- name: withdraw_call
-- Migration 039: a lock call's requests withdrawn (session, call, kind,
-- namespace, its names as a JSON array of hex names, sorted) with the
-- hand-on, committed by the call; one row as remove_call's.
CALL {p}withdraw_call(?, ?, ?, ?, ?);

-- name: regrant_call
-- Migration 041: identifiers handed on (a JSON array of [kind, hex
-- namespace, hex name], sorted), each under its row lock, a
-- transaction's gate counted, committed by the call; one row as
-- remove_call's.
CALL {p}regrant_call(?);

-- name: settle_call
-- Migration 040: withdraw_call for a call that may still run, each
-- identifier's row locked (made when missing) and its fast holder
-- adopted first; same arguments and row.
CALL {p}settle_call(?, ?, ?, ?, ?);

-- name: turnstile_wait_mark
-- A contender waiting behind a turnstile past its first 25 ms, for
-- monitoring (migration 029): session, call, the row's id (negative, as a
-- fast holder's), client, kind, namespace, name.
INSERT IGNORE INTO {p}lock_waits (session_id, call_id, id, client_id, kind, ns, name, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, {now});

-- name: turnstile_wait_unmark
DELETE FROM {p}lock_waits WHERE session_id = ? AND call_id = ?;

-- name: turnstile_waits_purge
-- The marks of sessions that are gone (a process that died waiting).
DELETE FROM {p}lock_waits WHERE session_id NOT IN (SELECT id FROM {p}sessions);

-- name: turnstile_acquire
-- Migration 031: the turnstile and then the lock, on the session's line
-- (turnstile name, wait in seconds, kind, ns, name, holder id, session,
-- client, mode, call id, incarnation or 0). One row: the turnstile (1
-- free, 2 after a wait, 0 not within it, NULL failed), the rows
-- fast_acquire changed, the fence.
CALL {p}turnstile_acquire(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: turnstile_release
-- Migration 031: fast_release_name and then, when that released all
-- there was, RELEASE_LOCK, on the session's line (turnstile name,
-- session, kind, ns, name). One row: rows changed, the signal,
-- RELEASE_LOCK's answer or NULL.
CALL {p}turnstile_release(?, ?, ?, ?, ?);

-- name: turnstile_release_ns
-- Migration 034: fast_release_ns and then, when that released all there
-- was, RELEASE_LOCK of the one turnstile the session holds in the
-- namespace, on the session's line (turnstile name, session, kind, ns).
-- One row, as turnstile_release's.
CALL {p}turnstile_release_ns(?, ?, ?, ?);
