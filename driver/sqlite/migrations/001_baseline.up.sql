-- baton's schema on SQLite: tables, indexes, views and the triggers on
-- baton's own tables (SQLite has no stored routines). Later migrations
-- hold only tables, indexes and data moves.
--
-- Times are INTEGER microseconds since the Unix epoch.

-- ---- sessions and locks ----
-- hostid names the boot and PID namespace a session's process runs in, so
-- that a process on the same host can tell that the owner died (its PID is
-- gone) without waiting for the lease to run out.
CREATE TABLE {p}sessions (
    id         TEXT    NOT NULL PRIMARY KEY,
    client_id  TEXT    NOT NULL,
    host       TEXT    NOT NULL,
    pid        INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    hostid     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX {p}sessions_client ON {p}sessions (client_id);
CREATE INDEX {p}sessions_expires ON {p}sessions (expires_at);
CREATE INDEX {p}sessions_hostid ON {p}sessions (hostid);

-- One row per identifier: its fencing counter and its counts of granted
-- read and write instances and of waiting requests.
--
-- gated keeps the lock row's shape the same in every dialect: on SQLite a
-- transaction's lock (Client.LockTx) is the database's write lock, which
-- excludes every other writer, so no identifier is ever gated here.
--
-- The first instance granted on a free identifier is stored in the
-- identifier's own row (the h_ columns, "the inline holder") instead of a
-- request row, so that an uncontended acquire and its release write one
-- page each. The counters count the inline holder like any granted
-- instance. Its id is random and negative (chosen by the client), never
-- one of the request rows' rowids, and sorts before them: the inline
-- holder is its identifier's oldest instance. Whatever changes an
-- identifier's requests in a transaction first moves its inline holder
-- into a request row under the same id (the driver's Adopt hook), so the
-- slow path sees only request rows; readers see both through
-- {p}lock_holds.
CREATE TABLE {p}lock_idents (
    kind      INTEGER NOT NULL,
    ns        BLOB    NOT NULL,
    name      BLOB    NOT NULL,
    fence     INTEGER NOT NULL,
    n_r       INTEGER NOT NULL,
    n_w       INTEGER NOT NULL,
    n_p       INTEGER NOT NULL,
    gated     INTEGER NOT NULL DEFAULT 0,
    h_id      INTEGER,
    h_session TEXT,
    h_client  TEXT,
    h_mode    TEXT,
    h_call    INTEGER,
    h_token   INTEGER,
    h_at      INTEGER,
    PRIMARY KEY (kind, ns, name)
) WITHOUT ROWID;

CREATE TABLE {p}lock_requests (
    id         INTEGER PRIMARY KEY, -- rowid: ids only grow while rows exist
    session_id TEXT    NOT NULL,
    client_id  TEXT    NOT NULL,
    kind       INTEGER NOT NULL,
    ns         BLOB    NOT NULL,
    name       BLOB    NOT NULL,
    mode       TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    call_id    INTEGER NOT NULL,
    token      INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    granted_at INTEGER
);
CREATE INDEX {p}lock_requests_ident ON {p}lock_requests (kind, ns, name, id);
CREATE INDEX {p}lock_requests_session ON {p}lock_requests (session_id, kind, ns);
CREATE INDEX {p}lock_requests_pending ON {p}lock_requests (status) WHERE status <> 'G';

-- Triggers keep each lock row's counters (granted readers, granted writers,
-- waiting requests) equal to its requests, so that acquiring and releasing an
-- uncontended lock are one statement each. The engine's slow path writes the
-- same counters again; the values agree.
-- statement
CREATE TRIGGER {p}lock_requests_ins AFTER INSERT ON {p}lock_requests
BEGIN
    INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p)
    VALUES (NEW.kind, NEW.ns, NEW.name,
            MAX(NEW.token, CAST(unixepoch('subsec') * 1000000 AS INTEGER)),
            NEW.status = 'G' AND NEW.mode = 'R', NEW.status = 'G' AND NEW.mode = 'W', NEW.status <> 'G')
    ON CONFLICT (kind, ns, name) DO UPDATE
       SET fence = MAX(fence, NEW.token),
           n_r = n_r + excluded.n_r, n_w = n_w + excluded.n_w, n_p = n_p + excluded.n_p;
END;
-- end
-- statement
CREATE TRIGGER {p}lock_requests_del AFTER DELETE ON {p}lock_requests
BEGIN
    UPDATE {p}lock_idents
       SET n_r = n_r - (OLD.status = 'G' AND OLD.mode = 'R'),
           n_w = n_w - (OLD.status = 'G' AND OLD.mode = 'W'),
           n_p = n_p - (OLD.status <> 'G')
     WHERE kind = OLD.kind AND ns = OLD.ns AND name = OLD.name;
END;
-- end
-- statement
CREATE TRIGGER {p}lock_requests_upd AFTER UPDATE OF status ON {p}lock_requests
BEGIN
    UPDATE {p}lock_idents
       SET n_r = n_r - (OLD.status = 'G' AND OLD.mode = 'R') + (NEW.status = 'G' AND NEW.mode = 'R'),
           n_w = n_w - (OLD.status = 'G' AND OLD.mode = 'W') + (NEW.status = 'G' AND NEW.mode = 'W'),
           n_p = n_p - (OLD.status <> 'G') + (NEW.status <> 'G'),
           fence = MAX(fence, NEW.token)
     WHERE kind = OLD.kind AND ns = OLD.ns AND name = OLD.name;
END;
-- end

-- Every granted or waiting instance: the request rows and the inline
-- holders.
CREATE VIEW {p}lock_holds AS
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests
UNION ALL
SELECT h_id, h_session, h_client, kind, ns, name, h_mode, 'G', h_call, h_token, h_at, h_at
  FROM {p}lock_idents WHERE h_id IS NOT NULL;

-- Turnstiles in the process (driver/sqlite/turnstile.go): a contender that
-- holds nothing may wait behind an identifier's turnstile past the 25 ms
-- after which others go to the lock table. Monitoring still lists it as
-- PENDING from one row here, written once its wait passes that bound and
-- deleted when its call ends (the lock_info_list query; the grant rule,
-- the deadlock detector and the hand-on never read this table).
CREATE TABLE {p}lock_waits (
    session_id TEXT    NOT NULL,
    call_id    INTEGER NOT NULL,
    id         INTEGER NOT NULL,
    client_id  TEXT    NOT NULL,
    kind       INTEGER NOT NULL,
    ns         BLOB    NOT NULL,
    name       BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, call_id)
) WITHOUT ROWID;

-- ---- notify ----
CREATE TABLE {p}notifications (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    channel    TEXT    NOT NULL,
    payload    TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX {p}notifications_created ON {p}notifications (created_at);

-- ---- queues and jobs ----
-- messages holds only the backlog and what runs: ready ('R') and claimed
-- ('C') messages. Messages are served by (priority, order_at, id);
-- order_at is the enqueue time plus delay, and stays put when a message is
-- retried in ordered or per-key mode (the retry holds its place) or moves
-- to the retry time in parallel mode (the back of the queue). run_at is
-- when the message may next be claimed. meta is what a message carries
-- from its enqueuer to its handlers and its history (W3C trace context
-- today), as a JSON object; NULL for none. kind names a message's worker
-- (NULL: untyped), errors is the JSON array of its failed attempts (NULL:
-- none), cancel is 1 once a running message was asked to stop (its worker
-- then finishes it as cancelled). ukey and ukey_expires are a unique
-- message's key and its expiry, read by the triggers below.
CREATE TABLE {p}queues (
    name       TEXT    NOT NULL PRIMARY KEY,
    created_at INTEGER NOT NULL,
    paused     INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE {p}messages (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    queue        TEXT    NOT NULL,
    payload      BLOB    NOT NULL,
    priority     INTEGER NOT NULL,
    msg_key      TEXT,
    run_at       INTEGER NOT NULL,
    order_at     INTEGER NOT NULL,
    attempt      INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    state        TEXT    NOT NULL,
    claimed_by   TEXT,
    claim_mode   INTEGER,
    claim_until  INTEGER,
    last_error   TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    meta         TEXT,
    kind         TEXT,
    errors       TEXT,
    cancel       INTEGER NOT NULL DEFAULT 0,
    ukey         TEXT,
    ukey_expires INTEGER
);
CREATE INDEX {p}messages_ready ON {p}messages (queue, state, priority, order_at, id);
CREATE INDEX {p}messages_key ON {p}messages (queue, msg_key, state) WHERE msg_key IS NOT NULL;
-- Waiting messages by due time (queue_next_due, on every claim that finds
-- nothing ready, and the pages of scheduled and retrying messages), only
-- those that were delayed (a delay, a retry's backoff): a message enqueued
-- to run at once has run_at = created_at (one statement's clock) and never
-- touches this index; the queries that read it say run_at > created_at, so
-- SQLite uses it. There is no claims index: claims_stale and
-- claims_by_session read the running messages of each registered queue
-- from the ready index, whose (queue, state) prefix already finds them.
-- Every page a commit dirties is one more WAL frame.
CREATE INDEX {p}messages_due ON {p}messages (queue, state, run_at, id) WHERE state = 'R' AND run_at > created_at;

-- The history of every finished message: state 'D' (dead), 'K'
-- (completed) or 'X' (cancelled), kept for a retention period and pruned
-- in batches by a maintenance service.
CREATE TABLE {p}finished (
    id           INTEGER PRIMARY KEY,
    queue        TEXT    NOT NULL,
    payload      BLOB    NOT NULL,
    priority     INTEGER NOT NULL,
    msg_key      TEXT,
    attempt      INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    last_error   TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    finished_at  INTEGER NOT NULL,
    meta         TEXT,
    state        TEXT    NOT NULL DEFAULT 'D',
    kind         TEXT,
    errors       TEXT
);
CREATE INDEX {p}finished_queue ON {p}finished (queue, state, id);
CREATE INDEX {p}finished_state ON {p}finished (state, finished_at);
CREATE INDEX {p}finished_kind ON {p}finished (kind, state, id) WHERE kind IS NOT NULL;

-- A message finishes in one statement: marking it with its final state
-- (completed 'K', cancelled 'X', dead 'D') copies it to the history and
-- deletes it, in this trigger, within the statement's own transaction.
-- statement
CREATE TRIGGER {p}messages_finish AFTER UPDATE OF state ON {p}messages
WHEN NEW.state IN ('K', 'X', 'D')
BEGIN
    INSERT INTO {p}finished (id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors)
    VALUES (NEW.id, NEW.queue, NEW.payload, NEW.priority, NEW.msg_key, NEW.attempt, NEW.max_attempts, NEW.last_error, NEW.created_at,
            CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER), NEW.meta, NEW.state, NEW.kind, NEW.errors);
    DELETE FROM {p}messages WHERE id = NEW.id;
END;
-- end

-- Per-minute counts of acknowledged and dead-lettered messages per queue,
-- flushed by each process every few seconds (never on the hot path).
CREATE TABLE {p}queue_throughput (
    queue  TEXT    NOT NULL,
    bucket INTEGER NOT NULL,
    acked  INTEGER NOT NULL,
    dead   INTEGER NOT NULL,
    PRIMARY KEY (queue, bucket)
) WITHOUT ROWID;

-- Unique messages: one row per (queue, unique key) naming the message that
-- holds the key. A key without a period is held while its message waits or
-- runs (the row is taken over once the message is gone); a key with a
-- period is held until expires_at (microseconds), whatever the message does.
CREATE TABLE {p}unique_keys (
    queue      TEXT    NOT NULL,
    ukey       TEXT    NOT NULL,
    message_id INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (queue, ukey)
);
CREATE INDEX {p}unique_keys_expires ON {p}unique_keys (expires_at) WHERE expires_at > 0;

-- A message with a unique key nobody holds is enqueued in one statement
-- (message_insert_unique): the insert carries the key, a trigger before it
-- drops the row when the key exists (RAISE(IGNORE): no row, no error, the
-- statement returns nothing) and a trigger after it takes the key, naming
-- the new message. SQLite's single writer makes the check and the take
-- atomic. A plain insert (no key) passes both triggers' WHEN without
-- running them.
-- statement
CREATE TRIGGER {p}messages_unique_held BEFORE INSERT ON {p}messages
WHEN NEW.ukey IS NOT NULL
 AND EXISTS (SELECT 1 FROM {p}unique_keys WHERE queue = NEW.queue AND ukey = NEW.ukey)
BEGIN
    SELECT RAISE(IGNORE);
END;
-- end
-- statement
CREATE TRIGGER {p}messages_unique_take AFTER INSERT ON {p}messages
WHEN NEW.ukey IS NOT NULL
BEGIN
    INSERT INTO {p}unique_keys (queue, ukey, message_id, expires_at)
    VALUES (NEW.queue, NEW.ukey, NEW.id, COALESCE(NEW.ukey_expires, 0));
END;
-- end

-- Periodic messages: one row per schedule, its last tick (microseconds)
-- that some process enqueued. A process enqueues a tick's message only in
-- the transaction that moves last_tick forward to it, so each tick is
-- enqueued once, whatever the number of processes.
CREATE TABLE {p}schedules (
    name       TEXT    NOT NULL PRIMARY KEY,
    last_tick  INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- ---- events ----
-- Table-change subscriptions. A subscribed table gets baton's triggers,
-- which read this registry: adding or removing a subscription never
-- rewrites them. Each matching subscription gets one event, a message of
-- the queue 'ev:' || name, written in the same transaction as the change.
-- subscribed_as is the table as the subscription named it, the name
-- events carry ('' for table_name).
CREATE TABLE {p}subscriptions (
    name          TEXT    NOT NULL PRIMARY KEY,
    table_name    TEXT    NOT NULL,
    actions       TEXT    NOT NULL,
    max_attempts  INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    subscribed_as TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX {p}subscriptions_table ON {p}subscriptions (table_name);
