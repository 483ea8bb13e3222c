-- PostgreSQL: the queue slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds.
--
-- Message columns, in the order sqldriver.ScanMessage reads them:
-- id, queue, payload, priority, msg_key, run_at, order_at, attempt,
-- max_attempts, state, claimed_by, claim_mode, claim_until, last_error,
-- created_at.

-- name: message_retry_now
-- A waiting message of the queue becomes due now.
UPDATE {p}messages SET run_at = {now} WHERE id = $1 AND queue = $2 AND state = 'R';

-- name: finished_retry_now
-- A finished message of the queue (dead, completed or cancelled) back in
-- it under its own id, ready now, its attempts kept and one more allowed
-- when it had used them all; finished_delete_retried then deletes it from
-- the history.
INSERT INTO {p}messages (id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind, errors)
SELECT id, queue, payload, priority, msg_key, {now}, {now}, attempt,
       CASE WHEN attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END,
       'R', last_error, created_at, meta, kind, errors
  FROM {p}finished WHERE id = $1 AND queue = $2 AND state IN ('D', 'K', 'X');

-- name: finished_delete_retried
DELETE FROM {p}finished WHERE id = $1 AND queue = $2 AND state IN ('D', 'K', 'X');

-- name: message_delete_waiting
-- Deletes a waiting (not running) message of the queue, or one waiting
-- for its parents.
DELETE FROM {p}messages WHERE id = $1 AND queue = $2 AND state IN ('R', 'W');

-- name: message_state
SELECT state FROM {p}messages WHERE id = $1 AND queue = $2;

-- name: queue_pause
-- Pauses (1) or resumes (0) a queue: paused, no claim takes its messages.
UPDATE {p}queues SET paused = $1 WHERE name = $2;

-- name: queue_paused
SELECT paused FROM {p}queues WHERE name = $1;

-- name: queue_register
INSERT INTO {p}queues (name, created_at) VALUES ($1, {now}) ON CONFLICT (name) DO NOTHING;

-- name: queue_exists
SELECT COUNT(*) FROM {p}queues WHERE name = $1;

-- name: queue_list
SELECT name FROM {p}queues ORDER BY name;

-- name: queue_lock
-- Serializes ordered and per-key claims of one queue.
SELECT name FROM {p}queues WHERE name = $1 FOR UPDATE;

-- name: message_insert
-- Arguments: queue, payload, priority, key, delay, delay again, attempts, meta, kind.
INSERT INTO {p}messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind)
VALUES ($1, $2, $3, $4, {now} + $5::bigint, {now} + $6::bigint, 0, $7, 'R', '', {now}, $8, $9)
RETURNING id;

-- name: message_insert_unique
-- A message with a unique key that nobody holds yet, in one statement: the
-- key's row is inserted naming the message's id (drawn from the messages'
-- sequence first) and the message only when the key was new. No row: the
-- key exists, and the caller decides in a transaction whether it still
-- holds. Arguments: message_insert's, then the key and its expiry.
WITH k AS (
    INSERT INTO {p}unique_keys (queue, ukey, message_id, expires_at)
    VALUES ($1, $10, nextval('{p}messages_id_seq'), $11)
    ON CONFLICT (queue, ukey) DO NOTHING
    RETURNING message_id)
INSERT INTO {p}messages (id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind)
SELECT k.message_id, $1, $2, $3, $4, {now} + $5::bigint, {now} + $6::bigint, 0, $7, 'R', '', {now}, $8, $9 FROM k
RETURNING id;

-- name: claim_candidates
-- A queue with limits (migration 002) is refused: its claims take the
-- limited path (claim_limited_page, under queue_limits_lock).
-- Arguments: queue, kind ('' for any), limit.
SELECT id FROM {p}messages
 WHERE queue = $1 AND state = 'R' AND run_at <= {now} AND ($2::text = '' OR kind = $2)
   AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = $1::text AND (pq.paused <> 0 OR pq.limits IS NOT NULL))
 ORDER BY priority, order_at, id LIMIT $3
   FOR UPDATE SKIP LOCKED;

-- name: claim_candidates_per_key
-- The head of each key that has nothing in flight, and messages without a
-- key. Run under queue_lock.
SELECT m.id FROM {p}messages m
 WHERE m.queue = $1 AND m.state = 'R' AND m.run_at <= {now}
   AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = $1::text AND pq.paused <> 0)
   AND (m.msg_key IS NULL OR (
        NOT EXISTS (SELECT 1 FROM {p}messages c
                     WHERE c.queue = $1 AND c.msg_key = m.msg_key AND c.state = 'C')
    AND NOT EXISTS (SELECT 1 FROM {p}messages e
                     WHERE e.queue = $1 AND e.msg_key = m.msg_key AND e.state = 'R'
                       AND (e.priority < m.priority OR (e.priority = m.priority
                            AND (e.order_at < m.order_at OR (e.order_at = m.order_at AND e.id < m.id)))))))
 ORDER BY m.priority, m.order_at, m.id LIMIT $2;

-- name: claim_in_flight
SELECT COUNT(*) FROM {p}messages WHERE queue = $1 AND state = 'C';

-- name: claim_head
-- The next messages of an ordered queue in order, due or not, with how long
-- until each is due.
SELECT id, run_at - {now} FROM {p}messages WHERE queue = $1 AND state = 'R' AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = $1::text AND pq.paused <> 0) ORDER BY priority, order_at, id LIMIT $2;

-- name: claim_ids
UPDATE {p}messages
   SET state = 'C', claimed_by = $1, claim_mode = $2::int, claim_until = {now} + $3::bigint, attempt = attempt + 1
 WHERE id IN ({list4}) AND state = 'R';

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
   AND (SELECT 1 FROM {p}messages m WHERE m.queue = q.name AND m.state = 'R' AND m.run_at <= {now} LIMIT 1) IS NOT NULL;

-- name: queue_next_due
-- The delayed messages only (the partial due index, migration 022): one
-- enqueued to run at once is due already, and a claim that did not take it
-- waits for the next wake-up or poll whatever this returns.
SELECT MIN(run_at) - {now} FROM {p}messages
 WHERE queue = $1 AND state = 'R' AND run_at > created_at AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = $1::text AND pq.paused <> 0);

-- name: message_ack
DELETE FROM {p}messages WHERE id = $1 AND claimed_by = $2 AND attempt = $3 AND state = 'C';

-- name: message_retry
-- Arguments: see the SQLite query of the same name.
UPDATE {p}messages
   SET order_at = CASE WHEN $1::int = 1 THEN {now} + $2::bigint + 1 ELSE order_at END, run_at = {now} + $3::bigint,
       state = 'R', claimed_by = NULL, claim_mode = NULL, claim_until = NULL, last_error = $4::text,
       errors = (COALESCE(errors, '[]')::jsonb || jsonb_build_array($5::jsonb))::text
 WHERE id = $6 AND claimed_by = $7 AND attempt = $8 AND state = 'C' AND cancel = 0;

-- name: message_extend
-- A claim whose message was asked to stop (cancel) is not extended: its
-- worker then cancels the handler.
UPDATE {p}messages SET claim_until = {now} + $1::bigint WHERE id = $2 AND claimed_by = $3 AND attempt = $4 AND state = 'C' AND cancel = 0;

-- name: message_start
-- Starts a held claim (claim mode 9, a worker's in-order batch): its mode
-- becomes the given one and its lease runs from now. Arguments: mode,
-- lease, id, session, attempt.
UPDATE {p}messages SET claim_mode = $1::int, claim_until = {now} + $2::bigint
 WHERE id = $3 AND claimed_by = $4 AND attempt = $5 AND state = 'C' AND cancel = 0;

-- name: claims_stale
-- Claims whose lease ran out or whose session is gone: the running
-- messages of each registered queue, from the ready index (every message
-- is enqueued in a registered queue), MATERIALIZED so that the planner
-- cannot walk the primary key for ORDER BY id instead.
WITH c AS MATERIALIZED (
    SELECT m.id, m.claimed_by, m.attempt, m.max_attempts, m.claim_mode, m.claim_until
      FROM {p}queues q CROSS JOIN LATERAL (
           SELECT * FROM {p}messages WHERE queue = q.name AND state = 'C') m)
SELECT id, claimed_by, attempt, max_attempts, claim_mode FROM c
 WHERE claim_until < {now} OR NOT EXISTS (SELECT 1 FROM {p}sessions s WHERE s.id = c.claimed_by)
 ORDER BY id LIMIT $1;

-- name: claims_by_session
-- As claims_stale: the running messages of each registered queue.
WITH c AS MATERIALIZED (
    SELECT m.id, m.claimed_by, m.attempt, m.max_attempts, m.claim_mode
      FROM {p}queues q CROSS JOIN LATERAL (
           SELECT * FROM {p}messages WHERE queue = q.name AND state = 'C') m)
SELECT id, claimed_by, attempt, max_attempts, claim_mode FROM c WHERE claimed_by = $1;

-- name: message_list
-- A page of a queue's messages of one state in claim order, after a
-- position (keyset: the ready index, never a sort); then due (1), not yet
-- due (2) or both (0); never retried (1), retried (2) or both (0); the kind
-- ('' for any); the limit.
-- User data (sqlbase's withData): a tag ('' for any), a metadata key
-- ('' for any) and its value; in the meta column's JSON.
SELECT id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel
  FROM {p}messages
 WHERE queue = $1 AND state = $2 AND (priority, order_at, id) > ($3::int, $4::bigint, $5::bigint)
   AND ($6::int = 0 OR ($6::int = 1) = (run_at <= {now}))
   AND ($7::int = 0 OR ($7::int = 1) = (attempt = 0))
   AND ($8::text = '' OR kind = $8)
   AND ($10::text = '' OR (meta::jsonb -> 'tags') @> jsonb_build_array($10::text))
   AND ($11::text = '' OR (meta::jsonb -> 'metadata' ->> $11::text) = $12::text)
 ORDER BY priority, order_at, id LIMIT $9;

-- name: unique_insert
-- Reserves a unique key for a message about to be inserted; no row
-- inserted: the key exists (on MySQL the no-op update locks its row).
INSERT INTO {p}unique_keys (queue, ukey, message_id, expires_at) VALUES ($1, $2, 0, $3)
ON CONFLICT (queue, ukey) DO NOTHING;

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
  FROM {p}unique_keys u WHERE u.queue = $1 AND u.ukey = $2 FOR UPDATE;

-- name: unique_set
UPDATE {p}unique_keys SET message_id = $1, expires_at = $2 WHERE queue = $3 AND ukey = $4;

-- name: unique_purge
-- Keys whose period is over.
DELETE FROM {p}unique_keys WHERE expires_at > 0 AND expires_at < {now};

-- name: dead_list
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta
  FROM {p}finished WHERE queue = $1 AND state = 'D' ORDER BY id LIMIT $2;

-- name: dead_ids
SELECT id FROM {p}finished WHERE queue = $1 AND state = 'D' ORDER BY id LIMIT 500 FOR UPDATE;

-- name: dead_redrive_ids
-- The dead letters back in their queue, ready now, under their own ids
-- (their attempts start again from 0).
INSERT INTO {p}messages (id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind, errors)
SELECT id, queue, payload, priority, msg_key, {now}, {now}, 0, max_attempts, 'R', last_error, created_at, meta, kind, errors
  FROM {p}finished WHERE id IN ({list}) ORDER BY id;

-- name: dead_delete_ids
DELETE FROM {p}finished WHERE id IN ({list});

-- name: queue_delete_messages
DELETE FROM {p}messages WHERE queue = $1;

-- name: dead_purge
DELETE FROM {p}finished WHERE queue = $1 AND state = 'D';

-- name: dead_mark_redrive
-- DeadRedriveAll, in the caller's transaction: the queue's dead letters
-- marked (state 'r', which no other statement reads; the row locks keep
-- another re-drive off them), then copied ready now under their own ids
-- and deleted. A dead
-- letter added meanwhile keeps its state 'D' and is left alone.
UPDATE {p}finished SET state = 'r' WHERE queue = $1 AND state = 'D';

-- name: dead_redrive_marked
INSERT INTO {p}messages (id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind, errors)
SELECT id, queue, payload, priority, msg_key, {now}, {now}, 0, max_attempts, 'R', last_error, created_at, meta, kind, errors
  FROM {p}finished WHERE queue = $1 AND state = 'r' ORDER BY id;

-- name: dead_delete_marked
DELETE FROM {p}finished WHERE queue = $1 AND state = 'r';

-- name: queue_stats
-- Counts from the ready index, bounded: at most the limit (second argument)
-- entries of each state are read, so that a queue of millions answers as
-- fast as a small one. The first entries of state 'R' in claim order (how
-- many, how many of them are ready, how many wait out a retry's backoff,
-- how long the oldest ready one has waited), then the counts of 'C', of
-- the dead, the completed and the cancelled, whether the queue is
-- paused, and its limits (NULL: none).
SELECT r.total, r.ready, r.retrying, COALESCE({now} - r.oldest, 0),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}messages WHERE queue = $1 AND state = 'C' LIMIT $2) c),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}finished WHERE queue = $1 AND state = 'D' LIMIT $2) d),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}finished WHERE queue = $1 AND state = 'K' LIMIT $2) k),
       (SELECT COUNT(*) FROM (SELECT 1 FROM {p}finished WHERE queue = $1 AND state = 'X' LIMIT $2) x),
       COALESCE((SELECT paused FROM {p}queues WHERE name = $1), 0),
       (SELECT limits FROM {p}queues WHERE name = $1)
  FROM (SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN run_at <= {now} THEN 1 ELSE 0 END), 0) AS ready,
               COALESCE(SUM(CASE WHEN run_at > {now} AND attempt > 0 THEN 1 ELSE 0 END), 0) AS retrying,
               MIN(CASE WHEN run_at <= {now} THEN run_at END) AS oldest
          FROM (SELECT run_at, attempt FROM {p}messages WHERE queue = $1 AND state = 'R'
                 ORDER BY priority, order_at, id LIMIT $2) s) r;

-- name: queue_estimate_r
-- The planner's estimate of a state's count, for counts over the limit of
-- queue_stats (no table is read).
EXPLAIN (FORMAT JSON) SELECT 1 FROM {p}messages WHERE queue = $1 AND state = 'R';

-- name: queue_estimate_claimed
EXPLAIN (FORMAT JSON) SELECT 1 FROM {p}messages WHERE queue = $1 AND state = 'C';

-- name: queue_estimate_dead
EXPLAIN (FORMAT JSON) SELECT 1 FROM {p}finished WHERE queue = $1 AND state = 'D';

-- name: queue_estimate_completed
EXPLAIN (FORMAT JSON) SELECT 1 FROM {p}finished WHERE queue = $1 AND state = 'K';

-- name: queue_estimate_cancelled
EXPLAIN (FORMAT JSON) SELECT 1 FROM {p}finished WHERE queue = $1 AND state = 'X';

-- name: dead_count
SELECT COUNT(*) FROM {p}finished WHERE queue = $1 AND state = 'D';

-- name: message_ack_many
-- Acknowledges many claims of one session: (id, attempt) pairs. The plain
-- id list lets the planner use the primary key. Not a claim whose message
-- was asked to stop (cancel): it ends cancelled whatever its handler did.
DELETE FROM {p}messages WHERE claimed_by = $1 AND state = 'C' AND cancel = 0 AND id IN ({ids}) AND (id, attempt) IN ({pairs2});

-- name: message_snooze
-- Arguments: see the SQLite query of the same name.
UPDATE {p}messages
   SET order_at = CASE WHEN $1::int = 1 THEN {now} + $2::bigint + 1 ELSE order_at END, run_at = {now} + $3::bigint,
       state = 'R', claimed_by = NULL, claim_mode = NULL, claim_until = NULL,
       errors = (COALESCE(errors, '[]')::jsonb || jsonb_build_array($4::jsonb))::text, attempt = attempt - 1
 WHERE id = $5 AND claimed_by = $6 AND attempt = $7 AND state = 'C' AND cancel = 0;

-- name: message_release
-- Gives back a claim that was never handled: ready at once, in its place,
-- and the attempt the claim counted is taken back. Not a cancelled one
-- (it is finished cancelled instead).
UPDATE {p}messages
   SET state = 'R', claimed_by = NULL, claim_mode = NULL, claim_until = NULL, run_at = {now}, attempt = attempt - 1
 WHERE id = $1 AND claimed_by = $2 AND attempt = $3 AND state = 'C' AND cancel = 0;

-- name: throughput_add
-- Adds one process's counts since its last flush to the current minute:
-- acknowledged, retried, dead, and handler durations by bucket (d0..d15).
INSERT INTO {p}queue_throughput (queue, bucket, acked, retried, dead, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11, d12, d13, d14, d15)
VALUES ($1, {now} / 60000000, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
ON CONFLICT (queue, bucket) DO UPDATE
   SET acked = {p}queue_throughput.acked + excluded.acked, retried = {p}queue_throughput.retried + excluded.retried, dead = {p}queue_throughput.dead + excluded.dead, d0 = {p}queue_throughput.d0 + excluded.d0, d1 = {p}queue_throughput.d1 + excluded.d1, d2 = {p}queue_throughput.d2 + excluded.d2, d3 = {p}queue_throughput.d3 + excluded.d3, d4 = {p}queue_throughput.d4 + excluded.d4, d5 = {p}queue_throughput.d5 + excluded.d5, d6 = {p}queue_throughput.d6 + excluded.d6, d7 = {p}queue_throughput.d7 + excluded.d7, d8 = {p}queue_throughput.d8 + excluded.d8, d9 = {p}queue_throughput.d9 + excluded.d9, d10 = {p}queue_throughput.d10 + excluded.d10, d11 = {p}queue_throughput.d11 + excluded.d11, d12 = {p}queue_throughput.d12 + excluded.d12, d13 = {p}queue_throughput.d13 + excluded.d13, d14 = {p}queue_throughput.d14 + excluded.d14, d15 = {p}queue_throughput.d15 + excluded.d15;

-- name: throughput_recent
-- Acknowledged and dead-lettered messages in the last five minutes and the
-- current one, and how far into the current minute the clock is.
SELECT COALESCE(SUM(acked), 0)::bigint, COALESCE(SUM(dead), 0)::bigint, {now} % 60000000 FROM {p}queue_throughput
 WHERE queue = $1 AND bucket >= {now} / 60000000 - 5;

-- name: throughput_purge
-- The roll-up keeps a day and an hour (the dashboard's charts show a day).
DELETE FROM {p}queue_throughput WHERE bucket < {now} / 60000000 - 1500;

-- name: throughput_backlog
-- Records a queue's backlog (ready, scheduled, retrying) in the current
-- minute's roll-up row; a second sample in the minute replaces the first.
INSERT INTO {p}queue_throughput (queue, bucket, acked, dead, ready, scheduled, retrying)
VALUES ($1, {now} / 60000000, 0, 0, $2, $3, $4)
ON CONFLICT (queue, bucket) DO UPDATE SET ready = excluded.ready, scheduled = excluded.scheduled, retrying = excluded.retrying;

-- name: throughput_sampled
-- How many queues' backlogs the current minute has sampled (another
-- process's upkeep may have done it).
SELECT COUNT(*) FROM {p}queue_throughput WHERE bucket = {now} / 60000000 AND ready IS NOT NULL;

-- name: throughput_history
-- A queue's roll-up rows of the last minutes (second argument, the
-- current one included), oldest first, each with the current minute.
SELECT bucket, {now} / 60000000, acked, retried, dead, ready, scheduled, retrying, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11, d12, d13, d14, d15
  FROM {p}queue_throughput
 WHERE queue = $1 AND bucket > {now} / 60000000 - $2
 ORDER BY bucket;

-- name: message_mark
-- Marks a claimed message finished (state K, X or D) inside the
-- transaction that moves it to the history (message_move, then
-- message_delete_moved). Arguments: state, error text (NULL keeps the last
-- one), the attempt's error as a JSON object (NULL: none), id, session,
-- attempt.
UPDATE {p}messages
   SET state = $1::text, last_error = COALESCE($2::text, last_error), errors = CASE WHEN $3::text IS NULL THEN errors ELSE (COALESCE(errors, '[]')::jsonb || jsonb_build_array($3::jsonb))::text END
 WHERE id = $4 AND claimed_by = $5 AND attempt = $6 AND state = 'C';

-- name: message_mark_waiting
-- Marks a waiting message (or one waiting for its parents) finished
-- (cancelled), like message_mark.
UPDATE {p}messages SET state = $1 WHERE id = $2 AND state IN ('R', 'W');

-- name: message_request_cancel
-- Asks the worker of a running message to stop it.
UPDATE {p}messages SET cancel = 1 WHERE id = $1 AND state = 'C';

-- name: message_move
-- Copies a marked message to the history (arguments: id, its mark).
INSERT INTO {p}finished (id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors)
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, {now}, meta, state, kind, errors
  FROM {p}messages WHERE id = $1 AND state = $2;

-- name: message_delete_moved
DELETE FROM {p}messages WHERE id = $1 AND state = $2;

-- name: message_move_many
-- Completes claims of one session, with message_ack_many after it in the
-- same transaction: copies them ((id, attempt) pairs, as message_ack_many)
-- to the history, on the primary key. (PostgreSQL uses message_finish_many instead: one statement.)
INSERT INTO {p}finished (id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors)
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, {now}, meta, 'K', kind, errors
  FROM {p}messages WHERE claimed_by = $1 AND state = 'C' AND cancel = 0 AND id IN ({ids}) AND (id, attempt) IN ({pairs2});

-- name: message_get
SELECT id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel FROM {p}messages WHERE id = $1;

-- name: finished_get
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors FROM {p}finished WHERE id = $1;

-- name: finished_list
-- A page of a queue's finished messages of one state, newest first, before
-- an id (keyset on the history's queue index); the kind ('' for any).
-- User data (sqlbase's withData): a tag ('' for any), a metadata key
-- ('' for any) and its value; in the meta column's JSON.
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors FROM {p}finished
 WHERE queue = $1 AND state = $2 AND id < $3 AND ($4::text = '' OR kind = $4)
   AND ($6::text = '' OR (meta::jsonb -> 'tags') @> jsonb_build_array($6::text))
   AND ($7::text = '' OR (meta::jsonb -> 'metadata' ->> $7::text) = $8::text)
 ORDER BY id DESC LIMIT $5;

-- name: finished_prune
-- Deletes up to a batch of finished messages of one state older than an
-- age (microseconds), oldest first.
DELETE FROM {p}finished WHERE id IN (SELECT id FROM {p}finished WHERE state = $1 AND finished_at < {now} - $2::bigint ORDER BY finished_at LIMIT $3);

-- name: schedule_ensure
-- Creates a schedule's row, its last tick the one given, unless it exists.
INSERT INTO {p}schedules (name, last_tick, updated_at) VALUES ($1, $2, {now}) ON CONFLICT (name) DO NOTHING;

-- name: schedule_last
SELECT last_tick FROM {p}schedules WHERE name = $1;

-- name: schedule_advance
-- Moves a schedule's last tick forward to the given one (arguments: tick,
-- name, tick again); no row changes when another process got there first.
UPDATE {p}schedules SET last_tick = $1, updated_at = {now} WHERE name = $2 AND last_tick < $3;

-- name: message_list_waiting
-- A page of a queue's waiting messages not yet due, by due time, after a
-- position (run_at, id) on the due index (run_at > created_at: migration
-- 022 keeps only delayed messages there); then never retried (1), retried
-- (2) or both (0); the kind ('' for any); the limit. "Not yet due" is
-- folded into the row bound, the statement's time (stable, unlike {now}),
-- so that the index scan starts there instead of filtering every waiting
-- message.
-- User data (sqlbase's withData): a tag ('' for any), a metadata key
-- ('' for any) and its value; in the meta column's JSON.
SELECT id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel
  FROM {p}messages
 WHERE queue = $1 AND state = 'R' AND run_at > created_at
   AND (run_at, id) > (GREATEST($2::bigint, (extract(epoch from statement_timestamp()) * 1000000)::bigint),
                       CASE WHEN $2::bigint > (extract(epoch from statement_timestamp()) * 1000000)::bigint
                            THEN $3::bigint ELSE 9223372036854775807 END)
   AND ($4::int = 0 OR ($4::int = 1) = (attempt = 0))
   AND ($5::text = '' OR kind = $5)
   AND ($7::text = '' OR (meta::jsonb -> 'tags') @> jsonb_build_array($7::text))
   AND ($8::text = '' OR (meta::jsonb -> 'metadata' ->> $8::text) = $9::text)
 ORDER BY run_at, id LIMIT $6;

-- name: message_waiting_kind
-- The waiting messages of one kind in a queue, ids and payloads, in claim
-- order: read in the caller's transaction (Client.WaitingTx). Arguments:
-- queue, kind.
SELECT id, payload FROM {p}messages
 WHERE queue = $1 AND state = 'R' AND kind = $2
 ORDER BY priority, order_at, id;

-- only postgres: arrays as arguments (unnest).
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

-- only sqlite, postgres: MySQL has no UPDATE ... RETURNING.
-- name: claim_parallel
-- A queue with limits (migration 002) is refused: its claims take the
-- limited path (claim_limited_page, under queue_limits_lock).
-- A parallel claim in one statement; SKIP LOCKED lets concurrent claimers
-- pass each other. Arguments: session, mode, lease, queue, limit, kind (''
-- for any).
UPDATE {p}messages
   SET state = 'C', claimed_by = $1, claim_mode = $2::int, claim_until = {now} + $3::bigint, attempt = attempt + 1
 WHERE id IN (SELECT id FROM {p}messages
               WHERE queue = $4 AND state = 'R' AND run_at <= {now} AND ($6::text = '' OR kind = $6)
                 AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = $4::text AND (pq.paused <> 0 OR pq.limits IS NOT NULL))
               ORDER BY priority, order_at, id LIMIT $5
                 FOR UPDATE SKIP LOCKED)
RETURNING id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel;

-- only sqlite, postgres: the claims as one JSON argument, prepared once.
-- name: message_ack_many_json
-- message_ack_many with the claims as one JSON array of [id, attempt]
-- pairs ($2): one statement text whatever their number, prepared once and
-- planned in a millisecond, where a list of 500 pairs in the text took
-- 8-15 ms to plan and a new prepare per batch size. The ids go through
-- ARRAY(...) so that even a generic plan made while the table looked
-- empty reads them on the primary key (a join with the JSON elements was
-- planned as a nested loop over a sequential scan: 50 ms for 500).
DELETE FROM {p}messages m
 WHERE m.id = ANY (ARRAY(SELECT (c->>0)::bigint FROM jsonb_array_elements($2::jsonb) c))
   AND (m.id, m.attempt) IN (SELECT (c->>0)::bigint, (c->>1)::int FROM jsonb_array_elements($2::jsonb) c)
   AND m.claimed_by = $1 AND m.state = 'C' AND m.cancel = 0;

-- only sqlite, postgres: the claims as one JSON argument, prepared once.
-- name: message_finish_many_json
-- Completes many claims of one session in one statement: deletes them
-- (the claims as in message_ack_many_json) and writes them to the history.
WITH d AS (
    DELETE FROM {p}messages m
     WHERE m.id = ANY (ARRAY(SELECT (c->>0)::bigint FROM jsonb_array_elements($2::jsonb) c))
       AND (m.id, m.attempt) IN (SELECT (c->>0)::bigint, (c->>1)::int FROM jsonb_array_elements($2::jsonb) c)
       AND m.claimed_by = $1 AND m.state = 'C' AND m.cancel = 0
    RETURNING m.id, m.queue, m.payload, m.priority, m.msg_key, m.attempt, m.max_attempts, m.last_error, m.created_at, m.meta, m.kind, m.errors)
INSERT INTO {p}finished (id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors)
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, {now}, meta, 'K', kind, errors FROM d;

-- Bulk actions (QueueTx.MessagesBulk): each statement on the listed
-- messages of one queue (arguments: the queue, then the ids), in the
-- transaction of one batch.

-- name: bulk_delete_waiting
DELETE FROM {p}messages WHERE queue = $1 AND state IN ('R', 'W') AND id IN ({list2});

-- name: bulk_retry_waiting
-- Waiting ones due now; one that finished since is left in the history.
UPDATE {p}messages SET run_at = {now} WHERE queue = $1 AND state = 'R' AND id IN ({list2});

-- name: bulk_mark_cancelled
-- The waiting ones marked cancelled, then copied to the history
-- (bulk_move_cancelled) and deleted (bulk_delete_cancelled).
UPDATE {p}messages SET state = 'X' WHERE queue = $1 AND state IN ('R', 'W') AND id IN ({list2});

-- name: bulk_request_cancel
-- The running ones asked to stop (message_request_cancel); bulk_running
-- then lists them.
UPDATE {p}messages SET cancel = 1 WHERE queue = $1 AND state = 'C' AND id IN ({list2});

-- name: bulk_running
SELECT id FROM {p}messages WHERE queue = $1 AND state = 'C' AND id IN ({list2});

-- name: bulk_delete_finished
DELETE FROM {p}finished WHERE queue = $1 AND state IN ('D', 'K', 'X') AND id IN ({list2});

-- name: bulk_retry_finished
-- Finished ones back in the queue as finished_retry_now does; then
-- bulk_delete_finished.
INSERT INTO {p}messages (id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at, meta, kind, errors)
SELECT id, queue, payload, priority, msg_key, {now}, {now}, attempt,
       CASE WHEN attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END,
       'R', last_error, created_at, meta, kind, errors
  FROM {p}finished WHERE queue = $1 AND state IN ('D', 'K', 'X') AND id IN ({list2}) ORDER BY id;

-- only postgres, mysql: on SQLite the mark moves the rows (a trigger).
-- name: bulk_move_cancelled
INSERT INTO {p}finished (id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors)
SELECT id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, {now}, meta, state, kind, errors
  FROM {p}messages WHERE queue = $1 AND state = 'X' AND id IN ({list2});

-- only postgres, mysql: on SQLite the mark moves the rows (a trigger).
-- name: bulk_delete_cancelled
DELETE FROM {p}messages WHERE queue = $1 AND state = 'X' AND id IN ({list2});
-- Dependencies, workflows and batches (migration 003). A child waits in
-- state 'W' while an edge of message_deps to one of its parents is not
-- done; the dependency sweep (sqlbase DepsSweep, serialized by dep_lock)
-- marks edges done and makes children ready or cancels them.

-- name: dep_parent_state
-- A parent's stored state ('' when there is none); arguments: id, id.
SELECT COALESCE((SELECT state FROM {p}messages WHERE id = $1), (SELECT state FROM {p}finished WHERE id = $2), '');

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
UPDATE {p}message_deps d SET done = 1
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
UPDATE {p}messages SET state = 'X', last_error = $1 WHERE id = $2 AND state = 'W';

-- name: dep_done_child
UPDATE {p}message_deps SET done = 1 WHERE child = $1 AND done = 0;

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
UPDATE {p}messages SET state = 'R', meta = $1 WHERE id = $2 AND state = 'W';

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
 WHERE d.child = $1 ORDER BY d.parent;

-- name: dep_children
-- A message's dependants, as dep_parents.
SELECT d.child, COALESCE(m.state, f.state, ''), COALESCE(m.run_at, 0), COALESCE(m.attempt, 0)
  FROM {p}message_deps d
  LEFT JOIN {p}messages m ON m.id = d.child
  LEFT JOIN {p}finished f ON f.id = d.child
 WHERE d.parent = $1 ORDER BY d.child;

-- name: workflow_of
-- The workflow of a message and its step's name.
SELECT workflow, name FROM {p}workflow_steps WHERE id = $1;

-- name: workflow_steps
-- A workflow's steps: id, name, then as dep_parents.
SELECT s.id, s.name, COALESCE(m.state, f.state, ''), COALESCE(m.run_at, 0), COALESCE(m.attempt, 0)
  FROM {p}workflow_steps s
  LEFT JOIN {p}messages m ON m.id = s.id
  LEFT JOIN {p}finished f ON f.id = s.id
 WHERE s.workflow = $1 ORDER BY s.id;

-- name: workflow_edges
SELECT d.parent, d.child FROM {p}message_deps d JOIN {p}workflow_steps s ON s.id = d.child
 WHERE s.workflow = $1 ORDER BY d.child, d.parent;

-- name: dep_purge
-- Edges and workflow steps whose message (the child) has left the
-- tables: pruned from the history, or deleted.
DELETE FROM {p}message_deps d
 WHERE NOT EXISTS (SELECT 1 FROM {p}messages m WHERE m.id = d.child)
   AND NOT EXISTS (SELECT 1 FROM {p}finished f WHERE f.id = d.child);

-- name: workflow_purge
DELETE FROM {p}workflow_steps s
 WHERE NOT EXISTS (SELECT 1 FROM {p}messages m WHERE m.id = s.id)
   AND NOT EXISTS (SELECT 1 FROM {p}finished f WHERE f.id = s.id);

-- name: dep_waiting_count
-- How many messages of a queue wait for their parents, up to a limit.
SELECT COUNT(*) FROM (SELECT 1 FROM {p}messages WHERE queue = $1 AND state = 'W' LIMIT $2) w;

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
SELECT meta FROM {p}messages WHERE id = $1 FOR UPDATE;

-- name: finished_meta
SELECT meta FROM {p}finished WHERE id = $1 FOR UPDATE;

-- name: message_set_meta
-- Arguments: meta, id.
UPDATE {p}messages SET meta = $1 WHERE id = $2;

-- name: finished_set_meta
UPDATE {p}finished SET meta = $1 WHERE id = $2;

-- name: message_set_output
-- Records a handler's output (JSON) under the meta column's key "output",
-- the other keys kept, on a current claim whose message was not asked to
-- stop. Arguments: output, id, session, attempt.
UPDATE {p}messages SET meta = (COALESCE(meta, '{}')::jsonb || jsonb_build_object('output', $1::jsonb))::text
 WHERE id = $2 AND claimed_by = $3 AND attempt = $4 AND state = 'C' AND cancel = 0;

-- ---- concurrency and rate limits (migration 002) ----

-- name: queue_limits_set
-- Sets a queue's limits (a JSON object; NULL clears them). Arguments:
-- limits, queue.
UPDATE {p}queues SET limits = $1 WHERE name = $2;

-- name: queue_limits
-- A queue's limits (NULL: none); no row: no such queue.
SELECT limits FROM {p}queues WHERE name = $1;

-- name: queue_limits_lock
-- queue_limits and the database clock (microseconds), locking the queue's
-- row: serializes the limited claims of the queue (and its ordered and
-- per-key claims, queue_lock) across processes. The claim's transaction
-- commits without waiting for the disk (set_config, local to it), as the
-- other claims do (the relaxed pool): a claim lost in a crash only
-- delivers a message again.
SELECT limits, {now} FROM {p}queues, set_config('synchronous_commit', 'off', true)
 WHERE name = $1 FOR UPDATE OF {p}queues;

-- name: claim_limited_flight
-- What the limits need of the queue's running messages: key, kind and,
-- when $1 is 1, the payload (a partition by an argument). Arguments:
-- payload wanted (1) or not (0), queue.
SELECT msg_key, kind, CASE WHEN $1::int = 1 THEN payload END FROM {p}messages
 WHERE queue = $2 AND state = 'C';

-- name: claim_limited_page
-- A page of the ready, due messages of a limited queue in serving order
-- after a position (keyset on the ready index), with what the limits need:
-- id, position, key, kind and, when $1 is 1, the payload. Arguments:
-- payload wanted, queue, kind ('' for any), position (priority, order_at,
-- id), limit. Run under queue_limits_lock; nothing of a paused queue.
SELECT id, priority, order_at, msg_key, kind, CASE WHEN $1::int = 1 THEN payload END
  FROM {p}messages
 WHERE queue = $2 AND state = 'R' AND run_at <= {now} AND ($3::text = '' OR kind = $3)
   AND (priority, order_at, id) > ($4::int, $5::bigint, $6::bigint)
   AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = $2::text AND pq.paused <> 0)
 ORDER BY priority, order_at, id LIMIT $7;

-- name: queue_starts_list
-- A rate-limited queue's start counts by partition and bucket. Run under
-- queue_limits_lock.
SELECT part, bucket_end, n FROM {p}queue_starts WHERE queue = $1;

-- name: queue_starts_add
-- Adds starts to a partition's bucket. Arguments: queue, partition,
-- bucket end (microseconds), count.
INSERT INTO {p}queue_starts (queue, part, bucket_end, n) VALUES ($1, $2, $3, $4)
ON CONFLICT (queue, part, bucket_end) DO UPDATE SET n = {p}queue_starts.n + excluded.n;

-- name: queue_starts_prune
-- Deletes a queue's buckets that ended at or before a time (microseconds).
DELETE FROM {p}queue_starts WHERE queue = $1 AND bucket_end <= $2;

-- only sqlite, postgres: MySQL has no UPDATE ... RETURNING.
-- name: claim_limited_direct
-- claim_parallel for a queue with limits but no partitions, under
-- queue_limits_lock: the limited claim takes as many as its limits allow
-- in one statement. The same arguments.
UPDATE {p}messages
   SET state = 'C', claimed_by = $1, claim_mode = $2::int, claim_until = {now} + $3::bigint, attempt = attempt + 1
 WHERE id IN (SELECT id FROM {p}messages
               WHERE queue = $4 AND state = 'R' AND run_at <= {now} AND ($6::text = '' OR kind = $6)
                 AND NOT EXISTS (SELECT 1 FROM {p}queues pq WHERE pq.name = $4::text AND pq.paused <> 0)
               ORDER BY priority, order_at, id LIMIT $5
                 FOR UPDATE SKIP LOCKED)
RETURNING id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel;

-- only postgres, mysql: a stored routine ({p}claim_limited).
-- name: claim_limited_one
-- A claim of a queue whose limits have no partitions in one round trip,
-- serialized with queue_limits_lock's claims ({p}claim_limited): nothing
-- when the queue is paused, has no such limits or no room. Arguments as
-- claim_parallel's.
SELECT id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel
  FROM {p}claim_limited($1, $2::int, $3::bigint, $4, $5::int, $6);
