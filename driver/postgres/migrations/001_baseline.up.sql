-- baton's schema on PostgreSQL: tables, indexes and views. The stored
-- functions live in sql/routines, one file each, and are (re)created by
-- Migrate after the migrations whenever their file changes. Later
-- migrations hold only tables, indexes and data moves.
--
-- Times are bigint microseconds from the database clock.

-- ---- sessions and locks ----
-- The lock state is UNLOGGED: it is not written to the WAL, so a lock
-- operation never waits for a disk flush. After a crash PostgreSQL empties
-- these tables; every client then finds its sessions gone at its next
-- heartbeat and reports them lost, which is the truth. Fencing stays
-- monotonic: a new lock row starts its counter at the clock in
-- microseconds.
--
-- hostid names the boot and PID namespace a session's process runs in, so
-- that a process on the same host can tell that the owner died (its PID is
-- gone) without waiting for the lease to run out.
CREATE UNLOGGED TABLE {p}sessions (
    id         text    NOT NULL PRIMARY KEY,
    client_id  text    NOT NULL,
    host       text    NOT NULL,
    pid        integer NOT NULL,
    name       text    NOT NULL,
    created_at bigint  NOT NULL,
    expires_at bigint  NOT NULL,
    hostid     text    NOT NULL DEFAULT ''
);
CREATE INDEX {p}sessions_client ON {p}sessions (client_id);
CREATE INDEX {p}sessions_expires ON {p}sessions (expires_at);
CREATE INDEX {p}sessions_hostid ON {p}sessions (hostid);

-- One row per identifier: its fencing counter and its counts of granted
-- read and write instances and of waiting requests.
--
-- The first instance granted on a free identifier is stored in the row
-- itself (the h_ columns, "the inline holder") instead of a request row:
-- an uncontended acquire is one upsert of that row and its release one
-- update, both HOT (no index covers the h_ columns; fillfactor leaves room
-- on each page). Every further instance, waiter and deadlock victim is a
-- request row. The inline holder never moves: it is an ordinary granted
-- instance (its id comes from the requests' sequence, its token is the
-- fence it was granted at, the counters count it) until its session
-- releases it or its requests are removed. Readers see both kinds through
-- {p}lock_holds.
--
-- gated: a transaction has locked the identifier (Client.LockTx, DESIGN §
-- Locks). A transaction holds an identifier's gate: a transaction-level
-- advisory lock on {p}gate_key, shared for a read lock and exclusive for a
-- write lock, taken in the caller's own transaction by {p}tx_gate, so its
-- commit or rollback releases it with nothing else to do, and pg_locks
-- lists it. The one-statement fast paths leave a gated identifier to
-- {p}request and {p}regrant, which ask {p}gate_held under the identifier's
-- row lock and count a held gate as another session's granted instance.
--
-- inc: the lock state's incarnation, so that the uncontended acquire of a
-- row that exists returns it from the row it updates instead of reading
-- {p}incarnation. A row's inc, once set, is always the current
-- incarnation: crash recovery empties {p}lock_idents together with
-- {p}incarnation (both UNLOGGED), and nothing else changes it. NULL until
-- an acquire of the row sets it; the statements then read {p}incarnation.
CREATE UNLOGGED TABLE {p}lock_idents (
    kind      smallint NOT NULL,
    ns        bytea    NOT NULL,
    name      bytea    NOT NULL,
    fence     bigint   NOT NULL,
    n_r       bigint   NOT NULL,
    n_w       bigint   NOT NULL,
    n_p       bigint   NOT NULL,
    h_id      bigint,
    h_session text,
    h_client  text,
    h_mode    text,
    h_call    bigint,
    h_token   bigint,
    h_at      bigint,
    gated     boolean  NOT NULL DEFAULT false,
    inc       bigint,
    PRIMARY KEY (kind, ns, name)
) WITH (fillfactor = 70);

CREATE UNLOGGED TABLE {p}lock_requests (
    id         bigserial PRIMARY KEY,
    session_id text     NOT NULL,
    client_id  text     NOT NULL,
    kind       smallint NOT NULL,
    ns         bytea    NOT NULL,
    name       bytea    NOT NULL,
    mode       text     NOT NULL,
    status     text     NOT NULL,
    call_id    bigint   NOT NULL,
    token      bigint   NOT NULL,
    created_at bigint   NOT NULL,
    granted_at bigint
);
CREATE INDEX {p}lock_requests_ident ON {p}lock_requests (kind, ns, name, id);
CREATE INDEX {p}lock_requests_session ON {p}lock_requests (session_id, kind, ns);
CREATE INDEX {p}lock_requests_pending ON {p}lock_requests (status) WHERE status <> 'G';

-- Every granted or waiting instance: the request rows and the inline
-- holders.
CREATE VIEW {p}lock_holds AS
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests
UNION ALL
SELECT h_id, h_session, h_client, kind, ns, name, h_mode, 'G', h_call, h_token, h_at, h_at
  FROM {p}lock_idents WHERE h_id IS NOT NULL;

-- A contender that holds nothing may wait behind an identifier's
-- turnstile past the 25 ms after which others go to the lock table (no
-- cycle can pass through its wait). Monitoring still lists it as PENDING
-- from one row here, written once its wait passes that bound and deleted
-- when its call ends (the lock_info_list query; the grant rule, the
-- deadlock detector and the hand-on never read this table).
CREATE UNLOGGED TABLE {p}lock_waits (
    session_id text     NOT NULL,
    call_id    bigint   NOT NULL,
    id         bigint   NOT NULL,
    client_id  text     NOT NULL,
    kind       smallint NOT NULL,
    ns         bytea    NOT NULL,
    name       bytea    NOT NULL,
    created_at bigint   NOT NULL,
    PRIMARY KEY (session_id, call_id)
);

-- The lock state's incarnation. Like the lock tables this one row is
-- UNLOGGED: crash recovery empties it together with them. The first session
-- after that writes a new row, whose id no earlier session knows (their
-- grants are refused) and whose lockable_from (now plus the longest lease in
-- use) is when holders of the lost state have all stopped counting
-- themselves holders; no lock is granted before it. A clean restart keeps
-- the row, the locks and the sessions, and changes nothing.
CREATE UNLOGGED TABLE {p}incarnation (
    one           smallint NOT NULL PRIMARY KEY CHECK (one = 1),
    id            bigint   NOT NULL,
    lockable_from bigint   NOT NULL
);
INSERT INTO {p}incarnation (one, id, lockable_from)
VALUES (1, (extract(epoch from clock_timestamp()) * 1000000)::bigint, 0);

-- Rows that serialize work across processes with SELECT ... FOR UPDATE.
CREATE TABLE {p}meta (
    k text NOT NULL PRIMARY KEY,
    v text NOT NULL
);
INSERT INTO {p}meta (k, v) VALUES ('deadlock', '');

-- ---- queues and jobs ----
-- Durable (logged) tables; see the SQLite baseline for the model. meta is
-- what a message carries from its enqueuer to its handlers and the
-- finished rows (W3C trace context today), as a JSON object; NULL for none.
CREATE TABLE {p}queues (
    name       text     NOT NULL PRIMARY KEY,
    created_at bigint   NOT NULL,
    paused     smallint NOT NULL DEFAULT 0
);

-- A queue table churns: every message is inserted, updated and deleted.
-- Vacuum it after a few thousand dead rows, whatever its size, so that
-- claims do not walk long runs of dead index entries.
CREATE TABLE {p}messages (
    id           bigserial PRIMARY KEY,
    queue        text     NOT NULL,
    payload      bytea    NOT NULL,
    priority     integer  NOT NULL,
    msg_key      text,
    run_at       bigint   NOT NULL,
    order_at     bigint   NOT NULL,
    attempt      integer  NOT NULL,
    max_attempts integer  NOT NULL,
    state        text     NOT NULL,
    claimed_by   text,
    claim_mode   integer,
    claim_until  bigint,
    last_error   text     NOT NULL DEFAULT '',
    created_at   bigint   NOT NULL,
    meta         text,
    kind         text,
    errors       text,
    cancel       smallint NOT NULL DEFAULT 0
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
        autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0,
        autovacuum_analyze_threshold = 5000);
CREATE INDEX {p}messages_ready ON {p}messages (queue, state, priority, order_at, id);
CREATE INDEX {p}messages_key ON {p}messages (queue, msg_key, state) WHERE msg_key IS NOT NULL;
-- Only messages that were delayed (a delay, a retry's backoff): a message
-- enqueued to run at once is never "not yet due", and enqueueing and
-- claiming it add no entry here; the queries that read it (queue_next_due,
-- message_list_waiting) say run_at > created_at. There is no claims
-- index: claims_stale and claims_by_session read the running messages of
-- each registered queue from the ready index. A claim adds two index
-- entries (primary key, ready).
CREATE INDEX {p}messages_due ON {p}messages (queue, state, run_at, id) WHERE state = 'R' AND run_at > created_at;

CREATE TABLE {p}finished (
    id           bigint   PRIMARY KEY,
    queue        text     NOT NULL,
    payload      bytea    NOT NULL,
    priority     integer  NOT NULL,
    msg_key      text,
    attempt      integer  NOT NULL,
    max_attempts integer  NOT NULL,
    last_error   text     NOT NULL,
    created_at   bigint   NOT NULL,
    finished_at  bigint   NOT NULL,
    meta         text,
    state        text     NOT NULL DEFAULT 'D',
    kind         text,
    errors       text
);
CREATE INDEX {p}finished_queue ON {p}finished (queue, state, id);
CREATE INDEX {p}finished_state ON {p}finished (state, finished_at);
CREATE INDEX {p}finished_kind ON {p}finished (kind, state, id) WHERE kind IS NOT NULL;

-- Per-minute counts of acknowledged and dead-lettered messages per queue,
-- flushed by each process every few seconds (never on the hot path).
CREATE TABLE {p}queue_throughput (
    queue  text   NOT NULL,
    bucket bigint NOT NULL,
    acked  bigint NOT NULL,
    dead   bigint NOT NULL,
    PRIMARY KEY (queue, bucket)
);

-- Unique messages: one row per (queue, unique key) naming the message that
-- holds the key. A key without a period is held while its message waits or
-- runs (the row is taken over once the message is gone); a key with a
-- period is held until expires_at (microseconds), whatever the message does.
CREATE TABLE {p}unique_keys (
    queue      text   NOT NULL,
    ukey       text   NOT NULL,
    message_id bigint NOT NULL,
    expires_at bigint NOT NULL,
    PRIMARY KEY (queue, ukey)
);
CREATE INDEX {p}unique_keys_expires ON {p}unique_keys (expires_at) WHERE expires_at > 0;

-- Periodic messages: see the SQLite baseline.
CREATE TABLE {p}schedules (
    name       text   NOT NULL PRIMARY KEY,
    last_tick  bigint NOT NULL,
    updated_at bigint NOT NULL
);

-- ---- events and notify ----
-- Table-change subscriptions: see the SQLite baseline. One trigger
-- function ({p}capture) serves every subscribed table; the trigger passes
-- the primary key columns as arguments. table_name is the registry's name,
-- schema.table, which the capture function matches
-- TG_TABLE_SCHEMA.TG_TABLE_NAME with; subscribed_as is the table as the
-- subscription named it ("people", or "app.people" when the subscriber
-- wrote the schema), the name events carry, the same bytes as on SQLite
-- and MySQL/MariaDB ('' for schema.table).
CREATE TABLE {p}subscriptions (
    name          text    NOT NULL PRIMARY KEY,
    table_name    text    NOT NULL,
    actions       text    NOT NULL,
    max_attempts  integer NOT NULL,
    created_at    bigint  NOT NULL,
    subscribed_as text    NOT NULL DEFAULT ''
);
CREATE INDEX {p}subscriptions_table ON {p}subscriptions (table_name);

-- Notifications from a table, for clients behind a transaction pooler
-- without listen_dsn (LISTEN through the pooler hears nothing). Every sender
-- keeps its NOTIFY and, in the same statement, also inserts the notification
-- here, but only while some such client is registered in notify_pollers
-- with an unexpired registration: with none, nothing is written. Readers
-- follow the MySQL backend's: after a cursor, tracking the gaps of ids
-- allocated before commit (internal/sqldriver.NotifyReader). Logged, like
-- the queues: a notification is no lock state.
CREATE TABLE {p}notifications (
    id         bigserial PRIMARY KEY,
    channel    text   NOT NULL,
    payload    text   NOT NULL,
    created_at bigint NOT NULL
);
CREATE INDEX {p}notifications_created ON {p}notifications (created_at);
-- The clients that read {p}notifications, each until expires_at (the
-- clock in microseconds): renewed while they read, deleted when they stop.
CREATE TABLE {p}notify_pollers (
    client_id  text   NOT NULL PRIMARY KEY,
    expires_at bigint NOT NULL
);
