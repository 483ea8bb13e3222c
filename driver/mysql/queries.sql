-- MySQL 8.0+ / MariaDB 10.6+ queries: the same names in every dialect's
-- queries.sql (what only MySQL has is in mysql.sql). {p} is the table
-- prefix, {now} the current time in microseconds (database clock).
--
-- Bind variables are positional "?" only: a value used twice is passed
-- twice. Transactions run at READ COMMITTED (set per connection): locking
-- reads and writes see the latest committed rows, and every plain read sees
-- what was committed when it started. Every change to an identifier's
-- requests happens under the identifier's row lock (ident_ensure /
-- ident_lock), so reads made under it are current. An uncontended
-- identifier has no InnoDB state at all: its holder is a row of the MEMORY
-- table {p}lock_fast (migration 023, statements in mysql.sql), which the
-- slow path takes over under the row lock; listings read {p}lock_holds,
-- the request rows and those holders.
--
-- Both servers evaluate single-table UPDATE and ON DUPLICATE KEY UPDATE
-- assignments left to right, each seeing the values already assigned
-- (unless MariaDB's SIMULTANEOUS_ASSIGNMENT sql_mode is on); the statements
-- below give the same result in either order.

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

-- name: notify_max
SELECT MAX(id) FROM {p}notifications;

-- name: notify_read
-- The notifications after the cursor (the first argument; at most 1000 of
-- them) and those of the listed ids still missing below it, in one
-- statement, so from one snapshot, by id: a notification that committed
-- late comes before its sender's next one, read in the same go.
SELECT id, channel, payload
  FROM (SELECT id, channel, payload FROM {p}notifications WHERE id > ? ORDER BY id LIMIT 1000) s
UNION ALL
SELECT id, channel, payload FROM {p}notifications WHERE id IN ({list})
ORDER BY id;

-- name: notify_purge
DELETE FROM {p}notifications WHERE created_at < {now} - ?;

-- ---- queues ----
-- Message columns, in the order sqldriver.ScanMessage reads them:
-- id, queue, payload, priority, msg_key, run_at, order_at, attempt,
-- max_attempts, state, claimed_by, claim_mode, claim_until, last_error,
-- created_at.

-- name: message_retry_now
-- A waiting message of the queue becomes due now.
UPDATE {p}messages SET run_at = {now} WHERE id = ? AND queue = ? AND state = 'R';

-- name: message_delete_waiting
-- Deletes a waiting (not running) message of the queue.
DELETE FROM {p}messages WHERE id = ? AND queue = ? AND state = 'R';

-- name: message_state
SELECT state FROM {p}messages WHERE id = ? AND queue = ?;

-- name: queue_pause
-- Pauses (1) or resumes (0) a queue: paused, no claim takes its messages.
UPDATE {p}queues SET paused = ? WHERE name = ?;

-- name: queue_paused
SELECT paused FROM {p}queues WHERE name = ?;

-- name: queue_register
INSERT IGNORE INTO {p}queues (name, created_at) VALUES (?, {now});

-- name: queue_exists
SELECT COUNT(*) FROM {p}queues WHERE name = ?;

-- name: queue_list
SELECT name FROM {p}queues ORDER BY name;

-- name: queue_lock
-- Serializes ordered and per-key claims of one queue.
SELECT name FROM {p}queues WHERE name = ? FOR UPDATE;

-- name: message_insert
-- Arguments: queue, payload, priority, key, delay, delay again, attempts, meta, kind.
INSERT INTO {p}messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind)
VALUES (?, ?, ?, ?, {now} + ?, {now} + ?, 0, ?, 'R', '', {now}, ?, ?);

-- name: message_insert_unique
-- A message with a unique key that nobody holds yet, in one round trip
-- and one commit (the procedure of migration 021; outside any
-- transaction only): the new id, or 0 when the key exists and nothing was
-- done. Arguments: message_insert's, then the key and its expiry.
CALL {p}enqueue_unique(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: claim_candidates
-- Arguments: queue, kind ('' for any), limit. Claims read the ready index.
SELECT id FROM {p}messages FORCE INDEX (messages_ready)
 WHERE queue = ? AND state = 'R' AND run_at <= {now} AND COALESCE(NULLIF(?, ''), kind) <=> kind
 ORDER BY priority, order_at, id LIMIT ?
   FOR UPDATE SKIP LOCKED;

-- name: claim_candidates_per_key
-- The head of each key that has nothing in flight, and messages without a
-- key. Run under queue_lock.
SELECT m.id FROM {p}messages m FORCE INDEX (messages_ready)
 WHERE m.queue = ? AND m.state = 'R' AND m.run_at <= {now}
   AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = m.queue AND pq.paused <> 0)
   AND (m.msg_key IS NULL OR (
        NOT EXISTS (SELECT 1 FROM {p}messages c
                     WHERE c.queue = m.queue AND c.msg_key = m.msg_key AND c.state = 'C')
    AND NOT EXISTS (SELECT 1 FROM {p}messages e
                     WHERE e.queue = m.queue AND e.msg_key = m.msg_key AND e.state = 'R'
                       AND (e.priority < m.priority OR (e.priority = m.priority
                            AND (e.order_at < m.order_at OR (e.order_at = m.order_at AND e.id < m.id)))))))
 ORDER BY m.priority, m.order_at, m.id LIMIT ?;

-- name: claim_in_flight
SELECT COUNT(*) FROM {p}messages WHERE queue = ? AND state = 'C';

-- name: claim_head
-- The next messages of an ordered queue in order, due or not, with how long
-- until each is due.
SELECT id, run_at - {now} FROM {p}messages WHERE queue = ? AND state = 'R' AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = {p}messages.queue AND pq.paused <> 0) ORDER BY priority, order_at, id LIMIT ?;

-- name: claim_ids
-- (A paused queue is checked here, not in claim_candidates: its FOR
-- UPDATE SKIP LOCKED would lock the queue row too.)
UPDATE {p}messages
   SET state = 'C', claimed_by = ?, claim_mode = ?, claim_until = {now} + ?, attempt = attempt + 1
 WHERE id IN ({list4}) AND state = 'R'
   AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = {p}messages.queue AND pq.paused <> 0);

-- name: message_by_ids
SELECT id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel
  FROM {p}messages WHERE id IN ({list});

-- name: queues_ready
-- Which of the listed queues (not paused) have a message ready to claim
-- now: one probe of the ready index per queue, stopping at the first due
-- message (a scalar subquery with LIMIT 1: an EXISTS becomes a semi-join
-- that reads every due message of the queues, which an ordered queue
-- whose head runs may have by the million). It is the poll of a client's
-- waiting consumers, for all of them (see driver.Driver).
SELECT q.name FROM {p}queues q
 WHERE q.name IN ({list}) AND q.paused = 0
   AND (SELECT 1 FROM {p}messages m FORCE INDEX (messages_ready) WHERE m.queue = q.name AND m.state = 'R' AND m.run_at <= {now} LIMIT 1) IS NOT NULL;

-- name: queue_next_due
-- The delayed messages only, as in every dialect (see driver.QueueTx).
SELECT MIN(run_at) - {now} FROM {p}messages
 WHERE queue = ? AND state = 'R' AND run_at > created_at AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = {p}messages.queue AND pq.paused <> 0);

-- name: message_ack
DELETE FROM {p}messages WHERE id = ? AND claimed_by = ? AND attempt = ? AND state = 'C';

-- name: message_retry
-- Arguments: 1 to move to the back of the queue (0 keeps its place),
-- delay, delay again, error, the attempt's error as a JSON object, id,
-- session, attempt. order_at is set before run_at: MySQL assigns left to
-- right.
UPDATE {p}messages
   SET order_at = CASE WHEN ? = 1 THEN {now} + ? + 1 ELSE order_at END, run_at = {now} + ?,
       state = 'R', claimed_by = NULL, claim_mode = NULL, claim_until = NULL, last_error = ?,
       errors = JSON_MERGE_PRESERVE(COALESCE(errors, '[]'), CONCAT('[', ?, ']'))
 WHERE id = ? AND claimed_by = ? AND attempt = ? AND state = 'C' AND cancel = 0;

-- name: message_extend
-- A claim whose message was asked to stop (cancel) is not extended: its
-- worker then cancels the handler.
UPDATE {p}messages SET claim_until = {now} + ? WHERE id = ? AND claimed_by = ? AND attempt = ? AND state = 'C' AND cancel = 0;

-- name: message_start
-- Starts a held claim (claim mode 9, a worker's in-order batch): its mode
-- becomes the given one and its lease runs from now. Arguments: mode,
-- lease, id, session, attempt.
UPDATE {p}messages SET claim_mode = ?, claim_until = {now} + ?
 WHERE id = ? AND claimed_by = ? AND attempt = ? AND state = 'C' AND cancel = 0;

-- name: claims_stale
-- Claims whose lease ran out or whose session is gone.
SELECT id, claimed_by, attempt, max_attempts, claim_mode FROM {p}messages m
 WHERE state = 'C' AND (claim_until < {now} OR NOT EXISTS (SELECT 1 FROM {p}sessions s WHERE s.id = m.claimed_by))
 ORDER BY id LIMIT ?;

-- name: claims_by_session
SELECT id, claimed_by, attempt, max_attempts, claim_mode FROM {p}messages WHERE state = 'C' AND claimed_by = ?;

-- name: message_list
-- A page of a queue's messages of one state in claim order, after a
-- position (keyset: the ready index, never a sort). Then: due (1), not yet
-- due (2) or both (0), three times; never retried (1), retried (2) or both
-- (0), three times; the kind ('' for any), twice; the limit (the same
-- arguments in every dialect but PostgreSQL, which numbers them).
SELECT id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel
  FROM {p}messages
 WHERE queue = ? AND state = ? AND (priority, order_at, id) > (?, ?, ?)
   AND (? = 0 OR (? = 1 AND run_at <= {now}) OR (? = 2 AND run_at > {now}))
   AND (? = 0 OR (? = 1 AND attempt = 0) OR (? = 2 AND attempt > 0))
   AND (? = '' OR kind = ?)
 ORDER BY priority, order_at, id LIMIT ?;

-- name: unique_insert
-- Reserves a unique key for a message about to be inserted; no row
-- inserted: the key exists (on MySQL the no-op update locks its row).
INSERT INTO {p}unique_keys (queue, ukey, message_id, expires_at) VALUES (?, ?, 0, ?)
ON DUPLICATE KEY UPDATE message_id = message_id;

-- name: unique_get
-- The message holding a unique key, locked: its id, whether the key has a
-- period (1) and whether that period is over (1), and the message's state
-- by its public name ('' when it is gone): sqldriver decides whether the
-- key still holds.
SELECT u.message_id,
       CASE WHEN u.expires_at > 0 THEN 1 ELSE 0 END,
       CASE WHEN u.expires_at > 0 AND u.expires_at <= {now} THEN 1 ELSE 0 END,
       COALESCE((SELECT CASE WHEN m.state = 'C' THEN 'running'
                             WHEN m.run_at <= {now} THEN 'ready'
                             WHEN m.attempt > 0 THEN 'retrying' ELSE 'scheduled' END
                   FROM {p}messages m WHERE m.id = u.message_id),
                (SELECT CASE f.state WHEN 'K' THEN 'completed' WHEN 'X' THEN 'cancelled' ELSE 'dead' END
                   FROM {p}finished f WHERE f.id = u.message_id), '')
  FROM {p}unique_keys u WHERE u.queue = ? AND u.ukey = ? FOR UPDATE;

-- name: unique_set
UPDATE {p}unique_keys SET message_id = ?, expires_at = ? WHERE queue = ? AND ukey = ?;

-- name: unique_purge
-- Keys whose period is over.
DELETE FROM {p}unique_keys WHERE expires_at > 0 AND expires_at < {now};

-- name: dead_list
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta
  FROM {p}finished WHERE queue = ? AND state = 'D' ORDER BY id LIMIT ?;

-- name: dead_ids
SELECT id FROM {p}finished WHERE queue = ? AND state = 'D' ORDER BY id LIMIT 500 FOR UPDATE;

-- name: dead_redrive_ids
INSERT INTO {p}messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind, errors)
SELECT queue, payload, priority, msg_key, {now}, {now}, 0, max_attempts, 'R', last_error, created_at, meta, kind, errors
  FROM {p}finished WHERE id IN ({list}) ORDER BY id;

-- name: dead_delete_ids
DELETE FROM {p}finished WHERE id IN ({list});

-- name: queue_delete_messages
DELETE FROM {p}messages WHERE queue = ?;

-- name: dead_purge
DELETE FROM {p}finished WHERE queue = ? AND state = 'D';

-- name: dead_mark_redrive
-- DeadRedriveAll, in the caller's transaction: the queue's dead letters
-- marked (state 'r', which no other statement reads; the row locks keep
-- another re-drive off them), then copied ready now and deleted. A dead
-- letter added meanwhile keeps its state 'D' and is left alone.
UPDATE {p}finished SET state = 'r' WHERE queue = ? AND state = 'D';

-- name: dead_redrive_marked
INSERT INTO {p}messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind, errors)
SELECT queue, payload, priority, msg_key, {now}, {now}, 0, max_attempts, 'R', last_error, created_at, meta, kind, errors
  FROM {p}finished WHERE queue = ? AND state = 'r' ORDER BY id;

-- name: dead_delete_marked
DELETE FROM {p}finished WHERE queue = ? AND state = 'r';

-- name: queue_stats
-- Counts from the ready index, bounded: at most the limit (second argument)
-- entries of each state are read, so that a queue of millions answers as
-- fast as a small one. The first entries of state 'R' in claim order (how
-- many, how many of them are ready, how many wait out a retry's backoff,
-- how long the oldest ready one has waited), then the counts of 'C', of
-- the dead, the completed and the cancelled, and whether the queue is
-- paused.
SELECT r.total, r.ready, r.retrying, COALESCE({now} - r.oldest, 0),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}messages WHERE queue = ? AND state = 'C' LIMIT ?) c),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}finished WHERE queue = ? AND state = 'D' LIMIT ?) d),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}finished WHERE queue = ? AND state = 'K' LIMIT ?) k),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}finished WHERE queue = ? AND state = 'X' LIMIT ?) x),
       COALESCE((SELECT paused FROM {p}queues WHERE name = ?), 0)
  FROM (SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN run_at <= {now} THEN 1 ELSE 0 END), 0) AS ready,
               COALESCE(SUM(CASE WHEN run_at > {now} AND attempt > 0 THEN 1 ELSE 0 END), 0) AS retrying,
               MIN(CASE WHEN run_at <= {now} THEN run_at END) AS oldest
          FROM (SELECT run_at, attempt FROM {p}messages WHERE queue = ? AND state = 'R'
                 ORDER BY priority, order_at, id LIMIT ?) s) r;

-- name: queue_estimate_r
-- The planner's estimate of a state's count, for counts over the limit of
-- queue_stats (no table is read).
EXPLAIN FORMAT=JSON SELECT 1 FROM {p}messages WHERE queue = ? AND state = 'R';

-- name: queue_estimate_claimed
EXPLAIN FORMAT=JSON SELECT 1 FROM {p}messages WHERE queue = ? AND state = 'C';

-- name: queue_estimate_dead
EXPLAIN FORMAT=JSON SELECT 1 FROM {p}finished WHERE queue = ? AND state = 'D';

-- name: queue_estimate_completed
EXPLAIN FORMAT=JSON SELECT 1 FROM {p}finished WHERE queue = ? AND state = 'K';

-- name: queue_estimate_cancelled
EXPLAIN FORMAT=JSON SELECT 1 FROM {p}finished WHERE queue = ? AND state = 'X';

-- name: dead_count
SELECT COUNT(*) FROM {p}finished WHERE queue = ? AND state = 'D';

-- name: message_ack_many
-- Acknowledges many claims of one session: (id, attempt) pairs. The plain
-- id list lets the planner use the primary key. Not a claim whose message
-- was asked to stop (cancel): it ends cancelled whatever its handler did.
DELETE FROM {p}messages WHERE claimed_by = ? AND state = 'C' AND cancel = 0 AND id IN ({ids}) AND (id, attempt) IN ({pairs});

-- name: message_release
-- Gives back a claim that was never handled: ready at once, in its place,
-- and the attempt the claim counted is taken back. Not a cancelled one
-- (it is finished cancelled instead).
UPDATE {p}messages
   SET state = 'R', claimed_by = NULL, claim_mode = NULL, claim_until = NULL, run_at = {now}, attempt = attempt - 1
 WHERE id = ? AND claimed_by = ? AND attempt = ? AND state = 'C' AND cancel = 0;

-- name: throughput_add
INSERT INTO {p}queue_throughput (queue, bucket, acked, dead) VALUES (?, {now} DIV 60000000, ?, ?)
ON DUPLICATE KEY UPDATE acked = acked + VALUES(acked), dead = dead + VALUES(dead);

-- name: throughput_recent
-- Acknowledged and dead-lettered messages in the last five minutes and the
-- current one, and how far into the current minute the clock is.
SELECT COALESCE(SUM(acked), 0), COALESCE(SUM(dead), 0), {now} % 60000000 FROM {p}queue_throughput
 WHERE queue = ? AND bucket >= {now} DIV 60000000 - 5;

-- name: throughput_purge
DELETE FROM {p}queue_throughput WHERE bucket < {now} DIV 60000000 - 60;

-- name: subscription_insert
INSERT INTO {p}subscriptions (name, table_name, subscribed_as, actions, max_attempts, created_at) VALUES (?, ?, ?, ?, ?, {now});

-- name: subscription_delete
DELETE FROM {p}subscriptions WHERE name = ?;

-- name: subscription_get
SELECT name, table_name, COALESCE(NULLIF(subscribed_as, ''), table_name), actions, max_attempts, created_at FROM {p}subscriptions WHERE name = ?;

-- name: subscription_list
SELECT name, table_name, COALESCE(NULLIF(subscribed_as, ''), table_name), actions, max_attempts, created_at FROM {p}subscriptions ORDER BY name;

-- name: subscription_count_table
SELECT COUNT(*) FROM {p}subscriptions WHERE table_name = ?;

-- name: message_mark
-- Marks a claimed message finished (state K, X or D) inside the
-- transaction that moves it to the history (message_move, then
-- message_delete_moved). Arguments: state, error text (NULL keeps the last
-- one), the attempt's error as a JSON object (NULL: none), id, session,
-- attempt.
UPDATE {p}messages
   SET state = ?, last_error = COALESCE(?, last_error), errors = JSON_MERGE_PRESERVE(COALESCE(errors, '[]'), COALESCE(CONCAT('[', ?, ']'), '[]'))
 WHERE id = ? AND claimed_by = ? AND attempt = ? AND state = 'C';

-- name: message_mark_waiting
-- Marks a waiting message finished (cancelled), like message_mark.
UPDATE {p}messages SET state = ? WHERE id = ? AND state = 'R';

-- name: message_request_cancel
-- Asks the worker of a running message to stop it.
UPDATE {p}messages SET cancel = 1 WHERE id = ? AND state = 'C';

-- name: message_move
-- Copies a marked message to the history (arguments: id, its mark).
INSERT INTO {p}finished (id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors)
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, {now}, meta, state, kind, errors
  FROM {p}messages WHERE id = ? AND state = ?;

-- name: message_delete_moved
DELETE FROM {p}messages WHERE id = ? AND state = ?;

-- name: message_move_many
-- Completes claims of one session, with message_ack_many after it in the
-- same transaction: copies them ((id, attempt) pairs, as message_ack_many)
-- to the history, on the primary key. FOR UPDATE: under READ COMMITTED the copy
-- would otherwise not lock the rows the delete then takes.
INSERT INTO {p}finished (id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors)
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, {now}, meta, 'K', kind, errors
  FROM {p}messages WHERE claimed_by = ? AND state = 'C' AND cancel = 0 AND id IN ({ids}) AND (id, attempt) IN ({pairs})
   FOR UPDATE;

-- name: message_get
SELECT id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel FROM {p}messages WHERE id = ?;

-- name: finished_get
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors FROM {p}finished WHERE id = ?;

-- name: finished_list
-- A page of a queue's finished messages of one state, newest first, before
-- an id (keyset on the history's queue index); the kind ('' for any).
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors FROM {p}finished
 WHERE queue = ? AND state = ? AND id < ? AND COALESCE(NULLIF(?, ''), kind) <=> kind
 ORDER BY id DESC LIMIT ?;

-- name: finished_prune
-- Deletes up to a batch of finished messages of one state older than an
-- age (microseconds), oldest first.
DELETE FROM {p}finished WHERE state = ? AND finished_at < {now} - ? ORDER BY finished_at LIMIT ?;

-- name: schedule_ensure
-- Creates a schedule's row, its last tick the one given, unless it exists.
INSERT IGNORE INTO {p}schedules (name, last_tick, updated_at) VALUES (?, ?, {now});

-- name: schedule_last
SELECT last_tick FROM {p}schedules WHERE name = ?;

-- name: schedule_advance
-- Moves a schedule's last tick forward to the given one (arguments: tick,
-- name, tick again); no row changes when another process got there first.
UPDATE {p}schedules SET last_tick = ?, updated_at = {now} WHERE name = ? AND last_tick < ?;

-- name: message_list_waiting
-- A page of a queue's waiting messages not yet due, by due time, after a
-- position (run_at, id) on the due index. Then never retried (1), retried
-- (2) or both (0), three times; the kind ('' for any), twice; the limit.
SELECT id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel
  FROM {p}messages
 WHERE queue = ? AND state = 'R' AND run_at > {now} AND (run_at, id) > (?, ?)
   AND (? = 0 OR (? = 1 AND attempt = 0) OR (? = 2 AND attempt > 0))
   AND (? = '' OR kind = ?)
 ORDER BY run_at, id LIMIT ?;

-- name: message_waiting_kind
-- The waiting messages of one kind in a queue, ids and payloads, in claim
-- order: read in the caller's transaction (Client.WaitingTx). Arguments:
-- queue, kind.
SELECT id, payload FROM {p}messages
 WHERE queue = ? AND state = 'R' AND kind = ?
 ORDER BY priority, order_at, id;
