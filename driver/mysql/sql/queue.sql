-- MySQL/MariaDB: the queue slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds
-- (database clock). Bind variables are positional "?" only: a value
-- used twice is passed twice. Transactions run at READ COMMITTED (set
-- per connection): locking reads and writes see the latest committed
-- rows, and every plain read sees what was committed when it started.
--
-- Both servers evaluate single-table UPDATE and ON DUPLICATE KEY UPDATE
-- assignments left to right, each seeing the values already assigned
-- (unless MariaDB's SIMULTANEOUS_ASSIGNMENT sql_mode is on); the statements
-- below give the same result in either order.
--
-- Message columns, in the order sqldriver.ScanMessage reads them:
-- id, queue, payload, priority, msg_key, run_at, order_at, attempt,
-- max_attempts, state, claimed_by, claim_mode, claim_until, last_error,
-- created_at.

-- name: message_retry_now
-- A waiting message of the queue becomes due now.
UPDATE {p}messages SET run_at = {now} WHERE id = ? AND queue = ? AND state = 'R';

-- name: finished_retry_now
-- A finished message of the queue (dead, completed or cancelled) back in
-- it under its own id, ready now, its attempts kept and one more allowed
-- when it had used them all; finished_delete_retried then deletes it from
-- the history.
INSERT INTO {p}messages (id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind, errors)
SELECT id, queue, payload, priority, msg_key, {now}, {now}, attempt,
       CASE WHEN attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END,
       'R', last_error, created_at, meta, kind, errors
  FROM {p}finished WHERE id = ? AND queue = ? AND state IN ('D', 'K', 'X');

-- name: finished_delete_retried
DELETE FROM {p}finished WHERE id = ? AND queue = ? AND state IN ('D', 'K', 'X');

-- name: message_delete_waiting
-- Deletes a waiting (not running) message of the queue, or one waiting
-- for its parents.
DELETE FROM {p}messages WHERE id = ? AND queue = ? AND state IN ('R', 'W');

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
-- User data (sqlbase's withData): a tag ('' for any), a metadata key
-- ('' for any) and its value; in the meta column's JSON.
SELECT id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel
  FROM {p}messages
 WHERE queue = ? AND state = ? AND (priority, order_at, id) > (?, ?, ?)
   AND (? = 0 OR (? = 1 AND run_at <= {now}) OR (? = 2 AND run_at > {now}))
   AND (? = 0 OR (? = 1 AND attempt = 0) OR (? = 2 AND attempt > 0))
   AND (? = '' OR kind = ?)
   AND (? = '' OR JSON_CONTAINS(JSON_EXTRACT(meta, '$.tags'), JSON_QUOTE(?)))
   AND (? = '' OR JSON_UNQUOTE(JSON_EXTRACT(meta, CONCAT('$.metadata."', ?, '"'))) = ?)
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
-- The dead letters back in their queue, ready now, under their own ids
-- (their attempts start again from 0).
INSERT INTO {p}messages (id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind, errors)
SELECT id, queue, payload, priority, msg_key, {now}, {now}, 0, max_attempts, 'R', last_error, created_at, meta, kind, errors
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
-- another re-drive off them), then copied ready now under their own ids
-- and deleted. A dead
-- letter added meanwhile keeps its state 'D' and is left alone.
UPDATE {p}finished SET state = 'r' WHERE queue = ? AND state = 'D';

-- name: dead_redrive_marked
INSERT INTO {p}messages (id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind, errors)
SELECT id, queue, payload, priority, msg_key, {now}, {now}, 0, max_attempts, 'R', last_error, created_at, meta, kind, errors
  FROM {p}finished WHERE queue = ? AND state = 'r' ORDER BY id;

-- name: dead_delete_marked
DELETE FROM {p}finished WHERE queue = ? AND state = 'r';

-- name: queue_stats
-- Counts from the ready index, bounded: at most the limit (second argument)
-- entries of each state are read, so that a queue of millions answers as
-- fast as a small one. The first entries of state 'R' in claim order (how
-- many, how many of them are ready, how many wait out a retry's backoff,
-- how long the oldest ready one has waited), then the counts of 'C', of
-- the dead, the completed and the cancelled, whether the queue is
-- paused, and its limits (NULL: none).
SELECT r.total, r.ready, r.retrying, COALESCE({now} - r.oldest, 0),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}messages WHERE queue = ? AND state = 'C' LIMIT ?) c),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}finished WHERE queue = ? AND state = 'D' LIMIT ?) d),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}finished WHERE queue = ? AND state = 'K' LIMIT ?) k),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}finished WHERE queue = ? AND state = 'X' LIMIT ?) x),
       COALESCE((SELECT paused FROM {p}queues WHERE name = ?), 0),
       (SELECT limits FROM {p}queues WHERE name = ?)
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

-- name: message_snooze
-- Arguments: see the SQLite query of the same name. order_at is set
-- before run_at, and attempt last: MySQL assigns left to right (the WHERE
-- clause sees the claim's attempt).
UPDATE {p}messages
   SET order_at = CASE WHEN ? = 1 THEN {now} + ? + 1 ELSE order_at END, run_at = {now} + ?,
       state = 'R', claimed_by = NULL, claim_mode = NULL, claim_until = NULL,
       errors = JSON_MERGE_PRESERVE(COALESCE(errors, '[]'), CONCAT('[', ?, ']')), attempt = attempt - 1
 WHERE id = ? AND claimed_by = ? AND attempt = ? AND state = 'C' AND cancel = 0;

-- name: message_release
-- Gives back a claim that was never handled: ready at once, in its place,
-- and the attempt the claim counted is taken back. Not a cancelled one
-- (it is finished cancelled instead).
UPDATE {p}messages
   SET state = 'R', claimed_by = NULL, claim_mode = NULL, claim_until = NULL, run_at = {now}, attempt = attempt - 1
 WHERE id = ? AND claimed_by = ? AND attempt = ? AND state = 'C' AND cancel = 0;

-- name: throughput_add
-- Adds one process's counts since its last flush to the current minute:
-- acknowledged, retried, dead, and handler durations by bucket (d0..d15).
INSERT INTO {p}queue_throughput (queue, bucket, acked, retried, dead, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11, d12, d13, d14, d15)
VALUES (?, {now} DIV 60000000, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE acked = acked + VALUES(acked), retried = retried + VALUES(retried), dead = dead + VALUES(dead), d0 = d0 + VALUES(d0), d1 = d1 + VALUES(d1), d2 = d2 + VALUES(d2), d3 = d3 + VALUES(d3), d4 = d4 + VALUES(d4), d5 = d5 + VALUES(d5), d6 = d6 + VALUES(d6), d7 = d7 + VALUES(d7), d8 = d8 + VALUES(d8), d9 = d9 + VALUES(d9), d10 = d10 + VALUES(d10), d11 = d11 + VALUES(d11), d12 = d12 + VALUES(d12), d13 = d13 + VALUES(d13), d14 = d14 + VALUES(d14), d15 = d15 + VALUES(d15);

-- name: throughput_recent
-- Acknowledged and dead-lettered messages in the last five minutes and the
-- current one, and how far into the current minute the clock is.
SELECT COALESCE(SUM(acked), 0), COALESCE(SUM(dead), 0), {now} % 60000000 FROM {p}queue_throughput
 WHERE queue = ? AND bucket >= {now} DIV 60000000 - 5;

-- name: throughput_purge
-- The roll-up keeps a day and an hour (the dashboard's charts show a day).
DELETE FROM {p}queue_throughput WHERE bucket < {now} DIV 60000000 - 1500;

-- name: throughput_backlog
-- Records a queue's backlog (ready, scheduled, retrying) in the current
-- minute's roll-up row; a second sample in the minute replaces the first.
INSERT INTO {p}queue_throughput (queue, bucket, acked, dead, ready, scheduled, retrying)
VALUES (?, {now} DIV 60000000, 0, 0, ?, ?, ?)
ON DUPLICATE KEY UPDATE ready = VALUES(ready), scheduled = VALUES(scheduled), retrying = VALUES(retrying);

-- name: throughput_sampled
-- How many queues' backlogs the current minute has sampled (another
-- process's upkeep may have done it).
SELECT COUNT(*) FROM {p}queue_throughput WHERE bucket = {now} DIV 60000000 AND ready IS NOT NULL;

-- name: throughput_history
-- A queue's roll-up rows of the last minutes (second argument, the
-- current one included), oldest first, each with the current minute.
SELECT bucket, {now} DIV 60000000, acked, retried, dead, ready, scheduled, retrying, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11, d12, d13, d14, d15
  FROM {p}queue_throughput
 WHERE queue = ? AND bucket > {now} DIV 60000000 - ?
 ORDER BY bucket;

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
-- Marks a waiting message (or one waiting for its parents) finished
-- (cancelled), like message_mark.
UPDATE {p}messages SET state = ? WHERE id = ? AND state IN ('R', 'W');

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
-- User data (sqlbase's withData): a tag ('' for any), a metadata key
-- ('' for any) and its value; in the meta column's JSON.
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors FROM {p}finished
 WHERE queue = ? AND state = ? AND id < ? AND COALESCE(NULLIF(?, ''), kind) <=> kind
   AND (? = '' OR JSON_CONTAINS(JSON_EXTRACT(meta, '$.tags'), JSON_QUOTE(?)))
   AND (? = '' OR JSON_UNQUOTE(JSON_EXTRACT(meta, CONCAT('$.metadata."', ?, '"'))) = ?)
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
-- User data (sqlbase's withData): a tag ('' for any), a metadata key
-- ('' for any) and its value; in the meta column's JSON.
SELECT id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel
  FROM {p}messages
 WHERE queue = ? AND state = 'R' AND run_at > {now} AND (run_at, id) > (?, ?)
   AND (? = 0 OR (? = 1 AND attempt = 0) OR (? = 2 AND attempt > 0))
   AND (? = '' OR kind = ?)
   AND (? = '' OR JSON_CONTAINS(JSON_EXTRACT(meta, '$.tags'), JSON_QUOTE(?)))
   AND (? = '' OR JSON_UNQUOTE(JSON_EXTRACT(meta, CONCAT('$.metadata."', ?, '"'))) = ?)
 ORDER BY run_at, id LIMIT ?;

-- name: message_waiting_kind
-- The waiting messages of one kind in a queue, ids and payloads, in claim
-- order: read in the caller's transaction (Client.WaitingTx). Arguments:
-- queue, kind.
SELECT id, payload FROM {p}messages
 WHERE queue = ? AND state = 'R' AND kind = ?
 ORDER BY priority, order_at, id;

-- Bulk actions (QueueTx.MessagesBulk): each statement on the listed
-- messages of one queue (arguments: the queue, then the ids), in the
-- transaction of one batch.

-- name: bulk_delete_waiting
DELETE FROM {p}messages WHERE queue = ? AND state IN ('R', 'W') AND id IN ({list2});

-- name: bulk_retry_waiting
-- Waiting ones due now; one that finished since is left in the history.
UPDATE {p}messages SET run_at = {now} WHERE queue = ? AND state = 'R' AND id IN ({list2});

-- name: bulk_mark_cancelled
-- The waiting ones marked cancelled, then copied to the history
-- (bulk_move_cancelled) and deleted (bulk_delete_cancelled).
UPDATE {p}messages SET state = 'X' WHERE queue = ? AND state IN ('R', 'W') AND id IN ({list2});

-- name: bulk_request_cancel
-- The running ones asked to stop (message_request_cancel); bulk_running
-- then lists them.
UPDATE {p}messages SET cancel = 1 WHERE queue = ? AND state = 'C' AND id IN ({list2});

-- name: bulk_running
SELECT id FROM {p}messages WHERE queue = ? AND state = 'C' AND id IN ({list2});

-- name: bulk_delete_finished
DELETE FROM {p}finished WHERE queue = ? AND state IN ('D', 'K', 'X') AND id IN ({list2});

-- name: bulk_retry_finished
-- Finished ones back in the queue as finished_retry_now does; then
-- bulk_delete_finished.
INSERT INTO {p}messages (id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind, errors)
SELECT id, queue, payload, priority, msg_key, {now}, {now}, attempt,
       CASE WHEN attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END,
       'R', last_error, created_at, meta, kind, errors
  FROM {p}finished WHERE queue = ? AND state IN ('D', 'K', 'X') AND id IN ({list2}) ORDER BY id;

-- only postgres, mysql: on SQLite the mark moves the rows (a trigger).
-- name: bulk_move_cancelled
INSERT INTO {p}finished (id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors)
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, {now}, meta, state, kind, errors
  FROM {p}messages WHERE queue = ? AND state = 'X' AND id IN ({list2});

-- only postgres, mysql: on SQLite the mark moves the rows (a trigger).
-- name: bulk_delete_cancelled
DELETE FROM {p}messages WHERE queue = ? AND state = 'X' AND id IN ({list2});
-- Dependencies, workflows and batches (migration 003). A child waits in
-- state 'W' while an edge of message_deps to one of its parents is not
-- done; the dependency sweep (sqlbase DepsSweep, serialized by dep_lock)
-- marks edges done and makes children ready or cancels them.

-- name: dep_parent_state
-- A parent's stored state ('' when there is none); arguments: id, id.
SELECT COALESCE((SELECT state FROM {p}messages WHERE id = ?), (SELECT state FROM {p}finished WHERE id = ?), '');

-- name: dep_parent_states
-- Would-be parents' stored states: the ids listed, each in one table.
SELECT id, state FROM {p}messages WHERE id IN ({list})
UNION ALL SELECT id, state FROM {p}finished WHERE id IN ({list});

-- name: dep_insert
-- Edges, rows of (parent, child, done (1: satisfied already), on_fail
-- (1: the child runs whatever becomes of the parent)).
INSERT INTO {p}message_deps (parent, child, done, on_fail) VALUES {rows};

-- name: dep_hold
-- Messages just inserted (a list of ids) wait for their parents.
UPDATE {p}messages SET state = 'W' WHERE id IN ({list}) AND state = 'R';

-- name: workflow_step_insert
-- Steps, rows of (workflow, id, name).
INSERT INTO {p}workflow_steps (workflow, id, name) VALUES {rows};

-- name: dep_lock
-- Serializes the dependency sweeps of every process.
SELECT 1 FROM {p}meta WHERE k = 'deps' FOR UPDATE;

-- name: dep_satisfiable
-- Children with an edge that is done now: its parent completed, or (the
-- child runs on failure) it is no longer waiting or running.
SELECT DISTINCT d.child FROM {p}message_deps d
 WHERE d.done = 0
   AND (EXISTS (SELECT 1 FROM {p}finished f WHERE f.id = d.parent AND f.state = 'K')
        OR (d.on_fail = 1 AND NOT EXISTS (SELECT 1 FROM {p}messages m WHERE m.id = d.parent)))
 LIMIT 1000;

-- name: dep_satisfy
UPDATE {p}message_deps d SET d.done = 1
 WHERE d.child IN ({list}) AND d.done = 0
   AND (EXISTS (SELECT 1 FROM {p}finished f WHERE f.id = d.parent AND f.state = 'K')
        OR (d.on_fail = 1 AND NOT EXISTS (SELECT 1 FROM {p}messages m WHERE m.id = d.parent)));

-- name: dep_doomed
-- Edges of children that do not run on failure whose parent did not
-- complete (dead, cancelled, or gone): child, parent, the parent's state
-- ('' when gone).
SELECT d.child, d.parent, COALESCE((SELECT f.state FROM {p}finished f WHERE f.id = d.parent), '')
  FROM {p}message_deps d
 WHERE d.done = 0 AND d.on_fail = 0
   AND NOT EXISTS (SELECT 1 FROM {p}messages m WHERE m.id = d.parent)
   AND NOT EXISTS (SELECT 1 FROM {p}finished f WHERE f.id = d.parent AND f.state = 'K')
 ORDER BY d.child LIMIT 1000;

-- name: dep_cancel_mark
-- Marks a waiting child cancelled (then moved to the history, as
-- message_mark_waiting). Arguments: error, id.
UPDATE {p}messages SET state = 'X', last_error = ? WHERE id = ? AND state = 'W';

-- name: dep_done_child
UPDATE {p}message_deps SET done = 1 WHERE child = ? AND done = 0;

-- name: dep_releasable
-- Of the listed children, those waiting with every edge done: id, queue,
-- meta, and whether any edge runs on failure (the child is told its
-- parents' outcomes).
SELECT m.id, m.queue, COALESCE(m.meta, ''),
       CASE WHEN EXISTS (SELECT 1 FROM {p}message_deps e WHERE e.child = m.id AND e.on_fail = 1) THEN 1 ELSE 0 END
  FROM {p}messages m
 WHERE m.id IN ({list}) AND m.state = 'W'
   AND NOT EXISTS (SELECT 1 FROM {p}message_deps d WHERE d.child = m.id AND d.done = 0);

-- name: dep_release
-- A waiting child becomes ready. Arguments: meta (NULL: none), id.
UPDATE {p}messages SET state = 'R', meta = ? WHERE id = ? AND state = 'W';

-- name: dep_probe
-- Whether an edge waits (1 or 0), and whether one may be settled now (its
-- parent neither waits nor runs): read before a sweep takes its lock.
SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM {p}message_deps WHERE done = 0 LIMIT 1) p),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}message_deps d WHERE d.done = 0
                                AND NOT EXISTS (SELECT 1 FROM {p}messages m WHERE m.id = d.parent) LIMIT 1) s);

-- name: dep_parents
-- A message's parents: id, stored state ('' when gone), and for a waiting
-- or running one its run_at and attempt (0 otherwise); argument: id.
SELECT d.parent, COALESCE(m.state, f.state, ''), COALESCE(m.run_at, 0), COALESCE(m.attempt, 0)
  FROM {p}message_deps d
  LEFT JOIN {p}messages m ON m.id = d.parent
  LEFT JOIN {p}finished f ON f.id = d.parent
 WHERE d.child = ? ORDER BY d.parent;

-- name: dep_children
-- A message's dependants, as dep_parents.
SELECT d.child, COALESCE(m.state, f.state, ''), COALESCE(m.run_at, 0), COALESCE(m.attempt, 0)
  FROM {p}message_deps d
  LEFT JOIN {p}messages m ON m.id = d.child
  LEFT JOIN {p}finished f ON f.id = d.child
 WHERE d.parent = ? ORDER BY d.child;

-- name: workflow_of
-- The workflow of a message and its step's name.
SELECT workflow, name FROM {p}workflow_steps WHERE id = ?;

-- name: workflow_steps
-- A workflow's steps: id, name, then as dep_parents.
SELECT s.id, s.name, COALESCE(m.state, f.state, ''), COALESCE(m.run_at, 0), COALESCE(m.attempt, 0)
  FROM {p}workflow_steps s
  LEFT JOIN {p}messages m ON m.id = s.id
  LEFT JOIN {p}finished f ON f.id = s.id
 WHERE s.workflow = ? ORDER BY s.id;

-- name: workflow_edges
SELECT d.parent, d.child FROM {p}message_deps d JOIN {p}workflow_steps s ON s.id = d.child
 WHERE s.workflow = ? ORDER BY d.child, d.parent;

-- name: dep_purge
-- Edges and workflow steps whose message (the child) has left the
-- tables: pruned from the history, or deleted.
DELETE d FROM {p}message_deps d
 WHERE NOT EXISTS (SELECT 1 FROM {p}messages m WHERE m.id = d.child)
   AND NOT EXISTS (SELECT 1 FROM {p}finished f WHERE f.id = d.child);

-- name: workflow_purge
DELETE s FROM {p}workflow_steps s
 WHERE NOT EXISTS (SELECT 1 FROM {p}messages m WHERE m.id = s.id)
   AND NOT EXISTS (SELECT 1 FROM {p}finished f WHERE f.id = s.id);

-- name: dep_waiting_count
-- How many messages of a queue wait for their parents, up to a limit.
SELECT COUNT(*) FROM (SELECT 1 FROM {p}messages WHERE queue = ? AND state = 'W' LIMIT ?) w;

-- name: dep_satisfiable_ids
-- dep_satisfiable for the edges of the listed parents (the primary key
-- the other way round: message_deps_parent).
SELECT DISTINCT d.child FROM {p}message_deps d
 WHERE d.parent IN ({list}) AND d.done = 0
   AND (EXISTS (SELECT 1 FROM {p}finished f WHERE f.id = d.parent AND f.state = 'K')
        OR (d.on_fail = 1 AND NOT EXISTS (SELECT 1 FROM {p}messages m WHERE m.id = d.parent)))
 LIMIT 1000;

-- name: dep_doomed_ids
-- dep_doomed for the edges of the listed parents.
SELECT d.child, d.parent, COALESCE((SELECT f.state FROM {p}finished f WHERE f.id = d.parent), '')
  FROM {p}message_deps d
 WHERE d.parent IN ({list}) AND d.done = 0 AND d.on_fail = 0
   AND NOT EXISTS (SELECT 1 FROM {p}messages m WHERE m.id = d.parent)
   AND NOT EXISTS (SELECT 1 FROM {p}finished f WHERE f.id = d.parent AND f.state = 'K')
 ORDER BY d.child LIMIT 1000;

-- name: dep_probe_ids
-- Whether an edge of the listed parents waits on a parent that neither
-- waits nor runs any more (1 or 0): the check after a process settled
-- them, or enqueued their children; a sweep settles nothing else.
SELECT COUNT(*) FROM (SELECT 1 FROM {p}message_deps d WHERE d.parent IN ({list}) AND d.done = 0
                        AND NOT EXISTS (SELECT 1 FROM {p}messages m WHERE m.id = d.parent) LIMIT 1) p;

-- name: message_meta
-- The meta column of a waiting or running message, its row locked
-- (UpdateMessage reads, merges and writes it back).
SELECT meta FROM {p}messages WHERE id = ? FOR UPDATE;

-- name: finished_meta
SELECT meta FROM {p}finished WHERE id = ? FOR UPDATE;

-- name: message_set_meta
-- Arguments: meta, id.
UPDATE {p}messages SET meta = ? WHERE id = ?;

-- name: finished_set_meta
UPDATE {p}finished SET meta = ? WHERE id = ?;

-- name: message_set_output
-- Records a handler's output (JSON) under the meta column's key "output",
-- the other keys kept, on a current claim whose message was not asked to
-- stop. Arguments: output, id, session, attempt.
UPDATE {p}messages SET meta = JSON_SET(COALESCE(meta, '{}'), '$.output', JSON_EXTRACT(?, '$'))
 WHERE id = ? AND claimed_by = ? AND attempt = ? AND state = 'C' AND cancel = 0;

-- ---- concurrency and rate limits (migration 002) ----

-- name: queue_limits_set
-- Sets a queue's limits (a JSON object; NULL clears them). Arguments:
-- limits, queue.
UPDATE {p}queues SET limits = ? WHERE name = ?;

-- name: queue_limits
-- A queue's limits (NULL: none); no row: no such queue.
SELECT limits FROM {p}queues WHERE name = ?;

-- name: queue_limits_lock
-- queue_limits and the database clock (microseconds), locking the queue's row: serializes the limited claims of
-- the queue (and its ordered and per-key claims, queue_lock) across
-- processes.
SELECT limits, {now} FROM {p}queues WHERE name = ? FOR UPDATE;

-- name: claim_limited_flight
-- What the limits need of the queue's running messages: key, kind and,
-- when the first argument is 1, the payload (a partition by an argument).
-- Arguments: payload wanted (1) or not (0), queue.
SELECT msg_key, kind, CASE WHEN ? = 1 THEN payload END FROM {p}messages FORCE INDEX (messages_ready)
 WHERE queue = ? AND state = 'C';

-- name: claim_limited_page
-- A page of the ready, due messages of a limited queue in serving order
-- after a position (keyset on the ready index), with what the limits need:
-- id, position, key, kind and, when the first argument is 1, the payload.
-- Arguments: payload wanted, queue, kind ('' for any), position
-- (priority, order_at, id), limit. Run under queue_limits_lock; nothing of
-- a paused queue. Not a locking read: the queue's row lock serializes
-- the limited claims, and claim_ids claims only what is still ready.
SELECT id, priority, order_at, msg_key, kind, CASE WHEN ? = 1 THEN payload END
  FROM {p}messages FORCE INDEX (messages_ready)
 WHERE queue = ? AND state = 'R' AND run_at <= {now} AND COALESCE(NULLIF(?, ''), kind) <=> kind
   AND (priority, order_at, id) > (?, ?, ?)
   AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = {p}messages.queue AND pq.paused <> 0)
 ORDER BY priority, order_at, id LIMIT ?;

-- name: queue_starts_list
-- A rate-limited queue's start counts by partition and bucket. Run under
-- queue_limits_lock.
SELECT part, bucket_end, n FROM {p}queue_starts WHERE queue = ?;

-- name: queue_starts_add
-- Adds starts to a partition's bucket. Arguments: queue, partition,
-- bucket end (microseconds), count.
INSERT INTO {p}queue_starts (queue, part, bucket_end, n) VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE n = n + VALUES(n);

-- name: queue_starts_prune
-- Deletes a queue's buckets that ended at or before a time (microseconds).
DELETE FROM {p}queue_starts WHERE queue = ? AND bucket_end <= ?;

-- only mysql: the other dialects' parallel claim is one statement (claim_parallel).
-- name: claim_ids_parallel
-- claim_ids for a parallel claim (claim_candidates' ids): nothing of a
-- paused queue, nor of a queue with limits (migration 002), whose claims
-- take the limited path under queue_limits_lock.
UPDATE {p}messages
   SET state = 'C', claimed_by = ?, claim_mode = ?, claim_until = {now} + ?, attempt = attempt + 1
 WHERE id IN ({list4}) AND state = 'R'
   AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = {p}messages.queue AND (pq.paused <> 0 OR pq.limits IS NOT NULL));

-- only postgres, mysql: a stored routine ({p}claim_limited).
-- name: claim_limited_one
-- A claim of a queue whose limits have no partitions in one round trip
-- and a transaction of its own ({p}claim_limited; outside any transaction
-- only): nothing when the queue is paused, has no such limits or no room.
-- Arguments as claim_ids_parallel's, then queue, limit and kind.
CALL {p}claim_limited(?, ?, ?, ?, ?, ?);
