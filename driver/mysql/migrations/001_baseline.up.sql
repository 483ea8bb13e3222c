-- baton's schema on MySQL 8.0+ / MariaDB 10.6+: tables, indexes and views.
-- The stored procedures and functions live in sql/routines, one file each,
-- and are (re)created by Migrate after the migrations whenever their file
-- changes. Later migrations hold only tables, indexes and data moves.
--
-- Lock identifiers are VARBINARY so that comparisons are exact byte
-- comparisons (no collation, no trailing-space padding). Times are BIGINT
-- microseconds from the database clock. DDL is not transactional in MySQL,
-- so every statement is idempotent and a migration interrupted halfway can
-- run again.

-- ---- sessions and locks ----
-- hostid names the boot and PID namespace a session's process runs in, so
-- that a process on the same host can tell that the owner died (its PID is
-- gone) without waiting for the lease to run out. incarnation is the lock
-- state's incarnation the session began in (see {p}incarnation).
CREATE TABLE IF NOT EXISTS {p}sessions (
    id          VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    client_id   VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    host        BLOB         NOT NULL,
    pid         BIGINT       NOT NULL,
    name        BLOB         NOT NULL,
    created_at  BIGINT       NOT NULL,
    expires_at  BIGINT       NOT NULL,
    hostid      VARCHAR(100) NOT NULL DEFAULT '',
    incarnation BIGINT       NOT NULL DEFAULT 0,
    PRIMARY KEY (id),
    KEY sessions_client (client_id),
    KEY sessions_expires (expires_at),
    KEY {p}sessions_hostid (hostid)
) ENGINE=InnoDB;

-- Uncontended locks without a redo-log flush. InnoDB flushes its log at
-- every commit (innodb_flush_log_at_trx_commit is global, not per
-- session), which bounded an uncontended acquire and release at about a
-- tenth of GET_LOCK's speed. {p}lock_fast is a MEMORY table: no log, no
-- transactions, emptied by every server restart. It holds one row per
-- identifier in use, with the identifier's fencing counter:
--
--   slow = 0: nothing of the identifier is in the slow path's tables. Its
--     one holder, if any, is the h_ columns (the fast holder), granted and
--     released by a single autocommit statement each, whose table lock
--     makes it atomic.
--   slow = 1: the identifier belongs to the engine's slow path (the rows
--     below, under the identifier's mutex): someone waited on it, took a
--     second instance, or a transaction gated it. The first slow-path
--     statement under the mutex sets slow = 1 (no fast statement touches
--     such a row), then copies a fast holder into {p}lock_requests under
--     its own id, once: a holder whose request row is gone was released
--     by the statement that deleted it, which also cleared the h_ columns.
--   The idle-row upkeep turns a row back to slow = 0 only under the
--   identifier's mutex, when nothing of it is left in the slow path.
--
-- A restart empties the MEMORY tables and {p}incarnation with them.
-- Sessions (in InnoDB) record the incarnation they began in, and neither a
-- renewal nor the slow path's session check accepts a session of another
-- one, so every session is lost; the first session of the new incarnation
-- marks gated identifiers as the slow path's again, starts request ids
-- above every id handed out before (incarnation_seed_requests), so that no
-- client still waiting on an old id can read a new request as its own,
-- then writes the row, lockable only once the longest lease in use has
-- passed (as PostgreSQL's UNLOGGED lock state).
--
-- A MEMORY table's size limit is max_heap_table_size when it is created;
-- the statement before raises it for this connection (256 MiB: about
-- 300,000 identifiers in use in {p}lock_fast). A full table refuses new
-- fast holders, and the slow path reports the error. After a restart the
-- driver makes the tables again at these sizes (fastlocks.go,
-- memoryTables).
SET SESSION max_heap_table_size = 268435456;

CREATE TABLE IF NOT EXISTS {p}lock_fast (
    kind      INT            NOT NULL,
    ns        VARBINARY(256) NOT NULL,
    name      VARBINARY(256) NOT NULL,
    fence     BIGINT         NOT NULL,
    slow      TINYINT        NOT NULL,
    h_id      BIGINT         NULL,
    h_session VARCHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NULL,
    h_client  VARCHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NULL,
    h_mode    CHAR(1)        CHARACTER SET ascii COLLATE ascii_bin NULL,
    h_call    BIGINT         NULL,
    h_at      BIGINT         NULL,
    PRIMARY KEY USING BTREE (kind, ns, name),
    KEY lock_fast_session USING BTREE (h_session, kind, ns),
    KEY lock_fast_holder USING BTREE (h_id)
) ENGINE=MEMORY;

CREATE TABLE IF NOT EXISTS {p}incarnation (
    one           TINYINT NOT NULL,
    id            BIGINT  NOT NULL,
    lockable_from BIGINT  NOT NULL,
    PRIMARY KEY (one)
) ENGINE=MEMORY;

INSERT IGNORE INTO {p}incarnation (one, id, lockable_from)
VALUES (1, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), 0);

-- A contender that holds nothing may wait behind an identifier's
-- turnstile past the 25 ms after which others go to the lock table (no
-- cycle can pass through its wait). Monitoring still lists it as PENDING
-- from one row here, written once its wait passes that bound and deleted
-- when its call ends (the lock_info_list query; the grant rule, the
-- deadlock detector and the hand-on never read this table). MEMORY, as
-- lock_fast: no redo-log flush, emptied by a restart with the sessions it
-- described.
CREATE TABLE IF NOT EXISTS {p}lock_waits (
    session_id VARCHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    call_id    BIGINT         NOT NULL,
    id         BIGINT         NOT NULL,
    client_id  VARCHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    kind       INT            NOT NULL,
    ns         VARBINARY(256) NOT NULL,
    name       VARBINARY(256) NOT NULL,
    created_at BIGINT         NOT NULL,
    PRIMARY KEY USING BTREE (session_id, call_id)
) ENGINE=MEMORY;

-- The slow path's lock state, in MEMORY as well: every change to it is one
-- procedure call, which the server runs to its end even when its client is
-- gone, so the state can live where writes cannot be rolled back, and a
-- slow-path call writes no redo:
--
--   {p}lock_idents keeps each identifier's fence and counters (granted
--     readers, granted writers, waiting requests), {p}lock_requests the
--     requests (B-tree indexes: MEMORY's default is a hash, which cannot
--     scan a range; MySQL has no partial indexes, so the pending index
--     covers every status).
--   {p}lock_mutex (InnoDB) is the identifier's mutex: its row lock
--     (SELECT ... FOR UPDATE) serializes the slow path's calls on the
--     identifier, and it keeps the identifier's gated flag (see
--     {p}lock_gates), which must outlive a restart (the gate rows do). A
--     transaction whose only InnoDB work is locking reads writes no redo.
--
-- Rules every statement on the lock state keeps (the routines, mysql.sql
-- and queries.sql):
--   1. A statement that reads or writes a MEMORY table never waits for an
--      InnoDB row lock: MEMORY tables are locked whole for the statement,
--      and a statement holding that lock while it waited for a row lock
--      would stall every other statement on the table behind a lock wait
--      no deadlock detector sees. Mutex rows are locked by statements of
--      their own; InnoDB tables appear beside MEMORY ones only in plain
--      reads (READ COMMITTED: no locks).
--   2. A call takes its identifiers' mutexes, in the identifiers' order,
--      before it changes their state. What a call may have written
--      before a later lock wait fails it (a deadlock victim) is state
--      that is whole by itself: a counters row made at zero, or a fast
--      holder adopted (a request row with its counters).
--
-- These two are made at 1 GiB.
SET SESSION max_heap_table_size = 1073741824;

CREATE TABLE IF NOT EXISTS {p}lock_idents (
    kind  INT            NOT NULL,
    ns    VARBINARY(256) NOT NULL,
    name  VARBINARY(256) NOT NULL,
    fence BIGINT         NOT NULL,
    n_r   BIGINT         NOT NULL,
    n_w   BIGINT         NOT NULL,
    n_p   BIGINT         NOT NULL,
    PRIMARY KEY USING BTREE (kind, ns, name)
) ENGINE=MEMORY;

CREATE TABLE IF NOT EXISTS {p}lock_requests (
    id         BIGINT         NOT NULL AUTO_INCREMENT,
    session_id VARCHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    client_id  VARCHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    kind       INT            NOT NULL,
    ns         VARBINARY(256) NOT NULL,
    name       VARBINARY(256) NOT NULL,
    mode       CHAR(1)        CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    status     CHAR(1)        CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    call_id    BIGINT         NOT NULL,
    token      BIGINT         NOT NULL,
    created_at BIGINT         NOT NULL,
    granted_at BIGINT         NULL,
    PRIMARY KEY USING BTREE (id),
    KEY lock_requests_ident USING BTREE (kind, ns, name, id),
    KEY lock_requests_session USING BTREE (session_id, kind, ns, name),
    KEY lock_requests_pending USING BTREE (status, kind, ns, name)
) ENGINE=MEMORY;

CREATE TABLE IF NOT EXISTS {p}lock_mutex (
    kind  INT            NOT NULL,
    ns    VARBINARY(256) NOT NULL,
    name  VARBINARY(256) NOT NULL,
    gated TINYINT        NOT NULL DEFAULT 0,
    PRIMARY KEY (kind, ns, name)
) ENGINE=InnoDB;

-- Every granted or waiting instance: the request rows and the fast holders
-- not copied into them yet (token: the fence they were granted at, which
-- no grant has moved since).
CREATE OR REPLACE VIEW {p}lock_holds AS
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests
UNION ALL
SELECT f.h_id, f.h_session, f.h_client, f.kind, f.ns, f.name, f.h_mode, 'G', f.h_call, f.fence, f.h_at, f.h_at
  FROM {p}lock_fast f
 WHERE f.h_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {p}lock_requests r WHERE r.id = f.h_id);

-- Transaction-scoped locks (Client.LockTx, DESIGN § Locks). A transaction
-- holds an identifier's gate: the row lock of its row in {p}lock_gates,
-- shared for a read lock (LOCK IN SHARE MODE) and exclusive for a write
-- lock (FOR UPDATE), taken in the caller's own transaction, so its commit
-- or rollback releases it with nothing else to do. Once a transaction has
-- taken a gate the identifier is gated ({p}lock_mutex): the fast path
-- leaves it to the engine's slow path, which tests the gate under the
-- identifier's mutex (a NOWAIT locking read in a statement of its own, let
-- go at once) and counts a held gate as another session's granted
-- instance. The transaction, for its part, checks the sessions' instances
-- under the same mutex after taking the gate, so neither side can miss the
-- other.
CREATE TABLE IF NOT EXISTS {p}lock_gates (
    kind INT            NOT NULL,
    ns   VARBINARY(256) NOT NULL,
    name VARBINARY(256) NOT NULL,
    PRIMARY KEY (kind, ns, name)
) ENGINE=InnoDB;

-- The holds of transactions, for monitoring only: a hold is live while
-- InnoDB lists its transaction (txn: connection id '@' start time) in
-- information_schema.INNODB_TRX, which needs the PROCESS privilege; rows
-- of ended transactions are removed when the next hold is recorded.
CREATE TABLE IF NOT EXISTS {p}lock_txholds (
    id      BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
    kind    INT            NOT NULL,
    ns      VARBINARY(256) NOT NULL,
    name    VARBINARY(256) NOT NULL,
    mode    CHAR(1)        NOT NULL,
    txn     VARCHAR(64)    NOT NULL,
    host    BLOB           NOT NULL,
    pid     INT            NOT NULL,
    owner   BLOB           NOT NULL,
    since   BIGINT         NOT NULL
) ENGINE=InnoDB;

-- Rows that serialize work across processes with SELECT ... FOR UPDATE.
CREATE TABLE IF NOT EXISTS {p}meta (
    k VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    v BIGINT      NOT NULL,
    PRIMARY KEY (k)
) ENGINE=InnoDB;

INSERT IGNORE INTO {p}meta (k, v) VALUES ('deadlock', 0);

-- ---- notify ----
-- Wake-ups (MySQL has no LISTEN/NOTIFY): each listening client registers
-- the id of its listener connection; a waker bumps seq and interrupts the
-- listener's SLEEP with KILL QUERY (extra.sql).
CREATE TABLE IF NOT EXISTS {p}wakeups (
    client_id  VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    conn_id    BIGINT      NOT NULL,
    seq        BIGINT      NOT NULL,
    updated_at BIGINT      NOT NULL,
    PRIMARY KEY (client_id)
) ENGINE=InnoDB;

-- Notifications, read by listeners after a cursor. Ids are allocated before
-- commit, so listeners track gaps (internal/sqldriver.NotifyReader).
CREATE TABLE IF NOT EXISTS {p}notifications (
    id         BIGINT      NOT NULL AUTO_INCREMENT,
    channel    VARCHAR(80) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    payload    TEXT        CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    created_at BIGINT      NOT NULL,
    PRIMARY KEY (id),
    KEY notifications_created (created_at)
) ENGINE=InnoDB;

-- ---- queues and jobs ----
-- See the SQLite baseline for the model. MySQL has no partial indexes, and
-- InnoDB updates only the secondary indexes whose columns change, so the
-- due and claims indexes cover every message.
CREATE TABLE IF NOT EXISTS {p}queues (
    name       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at BIGINT      NOT NULL,
    paused     TINYINT     NOT NULL DEFAULT 0,
    PRIMARY KEY (name)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS {p}messages (
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    queue        VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    payload      LONGBLOB     NOT NULL,
    priority     INT          NOT NULL,
    msg_key      VARBINARY(255),
    run_at       BIGINT       NOT NULL,
    order_at     BIGINT       NOT NULL,
    attempt      INT          NOT NULL,
    max_attempts INT          NOT NULL,
    state        CHAR(1)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    claimed_by   VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin,
    claim_mode   INT,
    claim_until  BIGINT,
    last_error   TEXT         CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    created_at   BIGINT       NOT NULL,
    meta         TEXT         CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    kind         VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin,
    errors       LONGTEXT     CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    cancel       TINYINT      NOT NULL DEFAULT 0,
    PRIMARY KEY (id),
    KEY messages_ready (queue, state, priority, order_at, id),
    KEY messages_key (queue, msg_key, state),
    KEY messages_claims (state, claim_until),
    KEY messages_due (queue, state, run_at, id)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS {p}finished (
    id           BIGINT       NOT NULL,
    queue        VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    payload      LONGBLOB     NOT NULL,
    priority     INT          NOT NULL,
    msg_key      VARBINARY(255),
    attempt      INT          NOT NULL,
    max_attempts INT          NOT NULL,
    last_error   TEXT         CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    created_at   BIGINT       NOT NULL,
    finished_at  BIGINT       NOT NULL,
    meta         TEXT         CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    state        CHAR(1)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'D',
    kind         VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin,
    errors       LONGTEXT     CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    PRIMARY KEY (id),
    KEY finished_queue (queue, state, id),
    KEY finished_state (state, finished_at),
    KEY finished_kind (kind, state, id)
) ENGINE=InnoDB;

-- Per-minute counts of acknowledged and dead-lettered messages per queue,
-- flushed by each process every few seconds (never on the hot path).
CREATE TABLE IF NOT EXISTS {p}queue_throughput (
    queue  VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    bucket BIGINT      NOT NULL,
    acked  BIGINT      NOT NULL,
    dead   BIGINT      NOT NULL,
    PRIMARY KEY (queue, bucket)
) ENGINE=InnoDB;

-- Unique messages: one row per (queue, unique key) naming the message that
-- holds the key. A key without a period is held while its message waits or
-- runs (the row is taken over once the message is gone); a key with a
-- period is held until expires_at (microseconds), whatever the message does.
CREATE TABLE IF NOT EXISTS {p}unique_keys (
    queue      VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    ukey       VARBINARY(300) NOT NULL,
    message_id BIGINT       NOT NULL,
    expires_at BIGINT       NOT NULL,
    PRIMARY KEY (queue, ukey),
    KEY unique_keys_expires (expires_at)
) ENGINE=InnoDB;

-- Periodic messages: see the SQLite baseline.
CREATE TABLE IF NOT EXISTS {p}schedules (
    name       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    last_tick  BIGINT      NOT NULL,
    updated_at BIGINT      NOT NULL,
    PRIMARY KEY (name)
) ENGINE=InnoDB;

-- ---- events ----
-- Table-change subscriptions: see the SQLite baseline. The triggers on a
-- subscribed table write the name the subscription gave (subscribed_as
-- keeps the registry the same in every dialect; '' for table_name).
CREATE TABLE IF NOT EXISTS {p}subscriptions (
    name          VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    table_name    VARCHAR(64)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    actions       VARCHAR(3)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    max_attempts  INT          NOT NULL,
    created_at    BIGINT       NOT NULL,
    subscribed_as VARCHAR(64)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
    PRIMARY KEY (name),
    KEY subscriptions_table (table_name)
) ENGINE=InnoDB;
