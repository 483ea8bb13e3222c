-- MySQL/MariaDB: the locks slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds
-- (database clock). Bind variables are positional "?" only: a value
-- used twice is passed twice. Transactions run at READ COMMITTED (set
-- per connection): locking reads and writes see the latest committed
-- rows, and every plain read sees what was committed when it started.
--
-- Every change to an identifier's requests happens under the
-- identifier's row lock (ident_ensure / ident_lock), so reads made
-- under it are current. An uncontended identifier has no InnoDB state
-- at all: its holder is a row of the MEMORY table {p}lock_fast
-- (migration 023, statements below), which the slow path takes over
-- under the row lock; listings read {p}lock_holds, the request rows
-- and those holders.
--
-- Both servers evaluate single-table UPDATE and ON DUPLICATE KEY UPDATE
-- assignments left to right, each seeing the values already assigned
-- (unless MariaDB's SIMULTANEOUS_ASSIGNMENT sql_mode is on); the statements
-- below give the same result in either order.

-- name: ident_ensure
-- The identifier's mutex row (migration 043), made when missing. The
-- engine runs ident_lock first and this only when it found no row, which
-- {p}ident_read never answers (it makes the row itself, as this does).
-- Not INSERT IGNORE: on an existing row that takes a shared lock, and
-- the FOR UPDATE that follows would upgrade it, a classic InnoDB deadlock
-- between two transactions on the same identifier. The no-op update
-- takes the exclusive lock at once.
INSERT INTO {p}lock_mutex (kind, ns, name, gated) VALUES (?, ?, ?, 0)
ON DUPLICATE KEY UPDATE gated = gated;

-- name: ident_lock
-- The identifier's mutex taken (its row and its counters made when
-- missing), then its fence, counters and gated flag: two tables, two
-- statements (migration 043: no statement on a MEMORY table waits for a
-- row lock), so a procedure call.
CALL {p}ident_read(?, ?, ?);

-- name: ident_update
UPDATE {p}lock_idents SET fence = ?, n_r = ?, n_w = ?, n_p = ? WHERE kind = ? AND ns = ? AND name = ?;

-- name: ident_purge_idle
-- The candidates only (the driver's PurgeIdle deletes each under its
-- mutex, {p}purge_ident): rows whose counter is more than a second behind
-- the clock (a row created again later starts at the clock, above every
-- token it gave) and nothing holds or waits for, and mutex rows without
-- counters (a restart empties the MEMORY tables, migration 043) that no
-- transaction gates.
SELECT kind, ns, name FROM {p}lock_idents WHERE n_r = 0 AND n_w = 0 AND n_p = 0 AND fence < {now} - 1000000
UNION
SELECT m.kind, m.ns, m.name FROM {p}lock_mutex m
 WHERE m.gated = 0 AND NOT EXISTS (SELECT 1 FROM {p}lock_idents i WHERE i.kind = m.kind AND i.ns = m.ns AND i.name = m.name);

-- name: fast_acquire_ident
-- Not used by this driver: its LockFastAcquire is {p}lock_fast's
-- (migration 023), and the identifier's row is the slow path's, written
-- only under its mutex (migration 043). Kept, as every dialect has it,
-- as a statement that never grants (n_r + n_w is 1).
SELECT fence FROM {p}lock_idents WHERE kind = ? AND ns = ? AND name = ? AND ? + ? < 0;

-- name: ident_release
-- No UPDATE ... RETURNING here: n_p = LAST_INSERT_ID(n_p) leaves n_p as it
-- is and reports it as the statement's insert id, which the MySQL fast
-- release reads instead of running ident_waiting.
UPDATE {p}lock_idents SET n_r = n_r - ?, n_w = n_w - ?, n_p = LAST_INSERT_ID(n_p)
 WHERE kind = ? AND ns = ? AND name = ?;

-- name: release_list_ns
-- FOR UPDATE: two releases by one session at the same moment must not
-- both count the same instances. The session's index is forced, here
-- and in every statement below that locks request rows by a key: the
-- table holds only waiters and extra instances, so InnoDB's estimate of
-- its size is a handful of rows while its indexes still hold the entries
-- of rows deleted but not yet purged, and MariaDB then chose to read the
-- whole table in id order (or every row), locking each row it passed: a
-- release waited for every other session's request rows and deadlocked
-- with other releases (TestReleaseLocksOnlyItsRows, docs/benchmarks.md).
-- No ORDER BY: read backwards (ORDER BY id DESC), the index's scan locked
-- the entry before the session's, another session's row; the caller
-- orders the rows, newest first (sqldriver.ReleaseTaken).
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests FORCE INDEX (lock_requests_session)
 WHERE session_id = ? AND kind = ? AND ns = ? AND status = 'G'
   FOR UPDATE;

-- name: release_list_name
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests FORCE INDEX (lock_requests_session)
 WHERE session_id = ? AND kind = ? AND ns = ? AND name = ? AND status = 'G'
   FOR UPDATE;

-- name: request_list_orphans
-- Requests whose session is gone: a stalled session's statement that landed
-- after another process reaped it.
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds r
 WHERE NOT EXISTS (SELECT 1 FROM {p}sessions s WHERE s.id = r.session_id)
 ORDER BY id LIMIT ?;

-- name: request_list
-- Through {p}lock_holds: read without the row lock (a transaction's wait
-- for the sessions), a fast holder counts too.
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_holds WHERE kind = ? AND ns = ? AND name = ? ORDER BY id;

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
-- in a mode that conflicts with the one given (the fast holder, or a
-- granted request): a try that would be refused whatever the queue. The
-- arguments come twice, once for each table. A holder the slow path is
-- adopting is in one table or both at every moment; one missed between
-- the two reads only sends the try down the slow path.
SELECT EXISTS (SELECT 1 FROM {p}lock_fast
                WHERE kind = ? AND ns = ? AND name = ? AND h_id IS NOT NULL
                  AND h_session <> ? AND (h_mode = 'W' OR ? = 'W'))
    OR EXISTS (SELECT 1 FROM {p}lock_requests FORCE INDEX (lock_requests_ident)
                WHERE kind = ? AND ns = ? AND name = ? AND status = 'G'
                  AND session_id <> ? AND (mode = 'W' OR ? = 'W'));

-- name: request_insert
-- The value list may refer to a column set earlier in it (status), which
-- spares passing the status twice.
INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, {now}, IF(status = 'G', {now}, NULL));

-- name: request_set_status
-- The constants are joined as a derived table so that granted_at depends
-- on the new status whatever order the assignments run in.
UPDATE {p}lock_requests r FORCE INDEX (PRIMARY) JOIN (SELECT ? AS st, ? AS tok) v
   SET r.granted_at = IF(v.st = 'G', {now}, r.granted_at), r.status = v.st, r.token = v.tok
 WHERE r.id = ? AND r.status = ?;

-- name: request_delete
-- The ids as a table joined to the primary key: for "id IN (...)" MariaDB
-- read every row once the list was about as long as its estimate of the
-- table (release_list_ns says why), hint or not.
DELETE r FROM JSON_TABLE(JSON_ARRAY({list}), '$[*]' COLUMNS (id bigint PATH '$')) x
  STRAIGHT_JOIN {p}lock_requests r FORCE INDEX (PRIMARY) ON r.id = x.id;

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
-- The row is inserted by the first migration.
SELECT v FROM {p}meta WHERE k = 'deadlock' FOR UPDATE;

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
 WHERE kind = ? AND ns = ? AND name = ? AND status = 'G' ORDER BY id LIMIT 1;

-- only mysql: no UPDATE ... RETURNING, so ident_release's count is read.
-- name: ident_waiting
SELECT n_p FROM {p}lock_idents WHERE kind = ? AND ns = ? AND name = ?;

-- ---- transaction-scoped locks (migration 020) ----
-- The gate's locking reads are built in txlocks.go (MariaDB and MySQL
-- spell a shared NOWAIT lock differently).

-- only postgres, mysql: gates are row flags (SQLite's: the write lock).
-- name: tx_prepare
-- Marks the identifier gated (creating its mutex row, migration 043);
-- affected rows 0 when it was already.
INSERT INTO {p}lock_mutex (kind, ns, name, gated) VALUES (?, ?, ?, 1)
ON DUPLICATE KEY UPDATE gated = 1;

-- only mysql: a gate is a row of {p}lock_gates.
-- name: tx_gate_exists
-- Not a locking read: a transaction may hold the row.
SELECT count(*) FROM {p}lock_gates WHERE kind = ? AND ns = ? AND name = ?;

-- only mysql: a gate is a row of {p}lock_gates.
-- name: tx_gate_ensure
-- Only when tx_gate_exists found nothing: on an existing row INSERT IGNORE
-- takes a shared lock, which waits for a transaction holding the gate.
INSERT IGNORE INTO {p}lock_gates (kind, ns, name) VALUES (?, ?, ?);

-- only postgres, mysql: gates are row flags (SQLite's: the write lock).
-- name: request_statuses_gated
-- request_statuses, and whether each request's identifier is gated (a
-- key lookup each): the client's poll of its waiting requests, one
-- statement per interval, also finds those a transaction's gate holds up
-- (driver.GatedStatuses).
SELECT r.id, r.session_id, r.client_id, r.kind, r.ns, r.name, r.mode, r.status, r.call_id, r.token, r.created_at, r.granted_at,
       COALESCE((SELECT m.gated FROM {p}lock_mutex m WHERE m.kind = r.kind AND m.ns = r.ns AND m.name = r.name), 0) <> 0
  FROM {p}lock_requests r WHERE r.id IN ({list});

-- only postgres, mysql: gates are row flags (SQLite's: the write lock).
-- name: tx_gated_among
-- The gated identifiers among some (TxGatedAmong): {keys} stands for one
-- "(kind = ? AND ns = ? AND name = ?)" per identifier, joined by OR (a key
-- lookup each).
SELECT kind, ns, name FROM {p}lock_mutex WHERE gated <> 0 AND ({keys});

-- only mysql: a transaction's hold is a row of {p}lock_txholds.
-- name: tx_hold_insert
-- In the caller's transaction: its hold, which other connections see only
-- reading uncommitted rows while the transaction runs; once it commits the
-- row is an ordinary one, of an ended transaction (see TxHolds).
INSERT INTO {p}lock_txholds (kind, ns, name, mode, txn, host, pid, owner, since)
VALUES (?, ?, ?, ?, CONNECTION_ID(), ?, ?, ?, {now});

-- only mysql: a transaction's hold is a row of {p}lock_txholds.
-- name: tx_holds_all
SELECT id, kind, ns, name, mode, 'G', CONCAT('tx ', txn), host, pid, owner, since FROM {p}lock_txholds ORDER BY id;

-- only mysql: a transaction's hold is a row of {p}lock_txholds.
-- name: tx_holds_ended
-- Read committed: the holds of transactions that ended.
SELECT id FROM {p}lock_txholds ORDER BY id LIMIT 1000;

-- only mysql: a transaction's hold is a row of {p}lock_txholds.
-- name: tx_holds_delete
-- As request_delete (above): "id IN (...)" read every row once the
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

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
-- name: fast_conflict_held
-- Whether another session than the one given holds the identifier (kind,
-- namespace, name) by the fast path in a mode that conflicts with the one
-- given (lock_conflict_held reads both tables).
SELECT EXISTS (SELECT 1 FROM {p}lock_fast
                WHERE kind = ? AND ns = ? AND name = ? AND h_id IS NOT NULL
                  AND h_session <> ? AND (h_mode = 'W' OR ? = 'W'));

-- only postgres, mysql: many names of a namespace at once.
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

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
-- name: fast_granted
-- The fast holders of one call: session, kind, ns, call id.
SELECT name, h_id, fence FROM {p}lock_fast
 WHERE h_session = ? AND kind = ? AND ns = ? AND h_call = ? AND slow = 0;

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
-- name: fast_undo
-- Withdraws the fast holders of one call (fast_acquire_many granted only
-- some): session, kind, ns, call id.
UPDATE {p}lock_fast FORCE INDEX (lock_fast_session)
   SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
 WHERE h_session = ? AND kind = ? AND ns = ? AND h_call = ? AND slow = 0;

-- only sqlite, mysql: PostgreSQL has release_name and release_inline.
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

-- only sqlite, mysql: PostgreSQL has release_ns and release_inline.
-- name: fast_release_ns
-- fast_release_name for every identifier of a namespace: session, kind,
-- ns. (FORCE INDEX: see the section's head.) Migration 034's
-- turnstile_release_ns carries a copy (TestTurnstileProceduresFollowFastPath).
UPDATE {p}lock_fast FORCE INDEX (lock_fast_session)
   SET h_session = IF(slow = 0, NULL, IF(LAST_INSERT_ID(IF(h_id IS NOT NULL, 3, IF(LAST_INSERT_ID() = 3, 3, 1))) > 0, h_session, h_session)),
       h_id = IF(slow = 0, NULL, h_id), h_client = IF(slow = 0, NULL, h_client),
       h_mode = IF(slow = 0, NULL, h_mode), h_call = IF(slow = 0, NULL, h_call), h_at = IF(slow = 0, NULL, h_at)
 WHERE h_session = ? AND kind = ? AND ns = ?;

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
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

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
-- name: fast_holder
-- The row fast_engage left: no fast statement changes it any more.
SELECT fence, h_id, h_session, h_client, h_mode, h_call, h_at FROM {p}lock_fast
 WHERE kind = ? AND ns = ? AND name = ?;

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
-- name: fast_adopt
-- The fast holder as a request row under its own id; affected rows 0 when
-- it is one already.
INSERT IGNORE INTO {p}lock_requests (id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
VALUES (?, ?, ?, ?, ?, ?, ?, 'G', ?, ?, ?, ?);

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
-- name: fast_clear_ids
-- Fast holders ({list} of ids) whose request rows are gone: in the
-- transaction that deletes the rows, before its commit (a holder left
-- behind would be adopted again).
UPDATE {p}lock_fast FORCE INDEX (lock_fast_holder)
   SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
 WHERE h_id IN ({list}) AND slow = 1;

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
-- name: fast_adopted
-- Fast holders ({list} of ids) whose adoption committed: h_id goes (later
-- adoptions need not look), h_session stays, so that the holder's own
-- release knows to go through InnoDB (fast_release_*), until that release
-- clears it ({p}release_instances, migration 038) or the row is handed
-- back.
UPDATE {p}lock_fast FORCE INDEX (lock_fast_holder) SET h_id = NULL WHERE h_id IN ({list}) AND slow = 1;

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
-- name: fast_idle_slow
-- Identifiers the slow path owns with no fast holder: candidates to hand
-- back to the fast path (fast_demote).
SELECT kind, ns, name FROM {p}lock_fast WHERE slow = 1 AND h_id IS NULL LIMIT 200;

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
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

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
-- name: fast_demote_check
-- Under the identifier's mutex (ident_lock): its fence when nothing of it
-- is left to the slow path (no holder, no waiter, no gate); no row
-- otherwise. A plain read: the mutex keeps the rows as they are.
SELECT li.fence FROM {p}lock_idents li
 WHERE li.kind = ? AND li.ns = ? AND li.name = ? AND li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0
   AND NOT EXISTS (SELECT 1 FROM {p}lock_mutex m WHERE m.kind = li.kind AND m.ns = li.ns AND m.name = li.name AND m.gated <> 0)
   AND NOT EXISTS (SELECT 1 FROM {p}lock_requests r WHERE r.kind = li.kind AND r.ns = li.ns AND r.name = li.name);

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
-- name: fast_demote
-- The fast path owns the identifier again: fence (from InnoDB), kind, ns,
-- name.
UPDATE {p}lock_fast
   SET slow = 0, fence = GREATEST(fence, ?), h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_at = NULL
 WHERE kind = ? AND ns = ? AND name = ? AND slow = 1 AND h_id IS NULL;

-- only mysql: the uncontended state in the MEMORY table {p}lock_fast.
-- name: fast_purge_idle
-- Free rows whose counter is more than a second behind the clock (a row
-- made again later starts at the clock, above every token it gave).
DELETE FROM {p}lock_fast WHERE slow = 0 AND h_id IS NULL AND fence < {now} - 1000000;

-- only mysql: a restart empties the MEMORY lock state.
-- name: incarnation_lease
-- Records a lease in use: the longest is how long a new incarnation waits.
INSERT INTO {p}meta (k, v) VALUES ('max_lease_us', ?) ON DUPLICATE KEY UPDATE v = GREATEST(v, VALUES(v));

-- only mysql: a restart empties the MEMORY lock state.
-- name: incarnation_get
SELECT id, GREATEST(0, lockable_from - {now}) FROM {p}incarnation;

-- only mysql: a restart empties the MEMORY lock state.
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

-- only mysql: a restart empties the MEMORY lock state.
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

-- only mysql: a restart empties the MEMORY lock state.
-- name: incarnation_seed_done
DELETE FROM {p}lock_requests WHERE session_id = '' AND client_id = '';

-- only mysql: a stored procedure call.
-- name: purge_ident
-- One idle identifier deleted under its mutex (ident_purge_idle lists
-- them): one row, 1 when it went.
CALL {p}purge_ident(?, ?, ?);

-- only mysql: a restart empties the MEMORY lock state.
-- name: incarnation_max_lease
SELECT COALESCE(MAX(v), 0) FROM {p}meta WHERE k = 'max_lease_us';

-- only mysql: a restart empties the MEMORY lock state.
-- name: incarnation_new
-- A new incarnation, lockable once the longest lease in use (the
-- argument) has passed. LOW_PRIORITY: the write waits for the statements
-- reading the table (session_renew, which may itself wait for a row lock)
-- without holding up later readers.
INSERT LOW_PRIORITY IGNORE INTO {p}incarnation (one, id, lockable_from) VALUES (1, {now}, {now} + ?);

-- only mysql: a stored procedure call.
-- name: request_call
-- Migrations 024 and 033: the slow path's request in one call (kind, ns,
-- name, session, client, mode, call id, try-once, incarnation or NULL),
-- committed by the call. One row: outcome, id, token, the fast holder it
-- found.
CALL {p}request_commit(?, ?, ?, ?, ?, ?, ?, ?, ?);

-- only mysql: a stored procedure call.
-- name: reentry_call
-- Migration 042: request_call for a request the engine believes the
-- session's instances cover (driver.RequestParams.Covered): granted in a
-- few statements when they do, request_call's outcome otherwise; same
-- arguments and row.
CALL {p}request_reentry(?, ?, ?, ?, ?, ?, ?, ?, ?);

-- only mysql: a stored procedure call.
-- name: release_call
-- Migration 038: the release of the session's instances of a name, or of
-- a namespace (name NULL), through InnoDB with its hand-on, committed by
-- the call (session, kind, ns, name, fast_release_*'s signal, the limit:
-- 0 for every instance). One row: the instances released, the
-- identifiers and the grants, as JSON arrays (releaseSlow in
-- fastlocks.go reads them).
CALL {p}release_instances(?, ?, ?, ?, ?, ?);

-- only postgres, mysql: SQLite has no stored routines.
-- name: remove_call
-- Migration 039: the withdrawal of requests (a JSON array of [id, kind,
-- hex namespace, hex name], sorted by identifier) with the hand-on,
-- committed by the call. One row: the requests deleted, the identifiers
-- and the grants, as JSON arrays (LockRequestsRemove in fastlocks.go
-- reads them).
CALL {p}remove_requests(?);

-- only postgres, mysql: SQLite has no stored routines.
-- name: withdraw_call
-- Migration 039: a lock call's requests withdrawn (session, call, kind,
-- namespace, its names as a JSON array of hex names, sorted) with the
-- hand-on, committed by the call; one row as remove_call's.
CALL {p}withdraw_call(?, ?, ?, ?, ?);

-- only mysql: a stored procedure call.
-- name: regrant_call
-- Migration 041: identifiers handed on (a JSON array of [kind, hex
-- namespace, hex name], sorted), each under its row lock, a
-- transaction's gate counted, committed by the call; one row as
-- remove_call's.
CALL {p}regrant_call(?);

-- only postgres, mysql: SQLite has no stored routines.
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

-- only postgres, mysql: the turnstile and the lock in one round trip.
-- name: turnstile_acquire
-- Migration 031: the turnstile and then the lock, on the session's line
-- (turnstile name, wait in seconds, kind, ns, name, holder id, session,
-- client, mode, call id, incarnation or 0). One row: the turnstile (1
-- free, 2 after a wait, 0 not within it, NULL failed), the rows
-- fast_acquire changed, the fence.
CALL {p}turnstile_acquire(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- only mysql: the turnstile is a named lock, released by a procedure.
-- name: turnstile_release
-- Migration 031: fast_release_name and then, when that released all
-- there was, RELEASE_LOCK, on the session's line (turnstile name,
-- session, kind, ns, name). One row: rows changed, the signal,
-- RELEASE_LOCK's answer or NULL.
CALL {p}turnstile_release(?, ?, ?, ?, ?);

-- only mysql: the turnstile is a named lock, released by a procedure.
-- name: turnstile_release_ns
-- Migration 034: fast_release_ns and then, when that released all there
-- was, RELEASE_LOCK of the one turnstile the session holds in the
-- namespace, on the session's line (turnstile name, session, kind, ns).
-- One row, as turnstile_release's.
CALL {p}turnstile_release_ns(?, ?, ?, ?);
