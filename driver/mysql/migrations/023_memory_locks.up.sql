-- Uncontended locks without a redo-log flush. InnoDB flushes its log at
-- every commit (innodb_flush_log_at_trx_commit is global, not per
-- session), which bounded an uncontended acquire and release at about a
-- tenth of GET_LOCK's speed. {p}lock_fast is a MEMORY table: no log, no
-- transactions, emptied by every server restart. It holds one row per
-- identifier in use, with the identifier's fencing counter:
--
--   slow = 0: nothing of the identifier is in InnoDB. Its one holder, if
--     any, is the h_ columns (the fast holder), granted and released by a
--     single autocommit statement each, whose table lock makes it atomic.
--   slow = 1: the identifier belongs to the engine's slow path (InnoDB
--     rows under {p}lock_idents' row lock): someone waited on it, took a
--     second instance, or a transaction gated it. The first slow-path
--     statement under the row lock sets slow = 1 (no fast statement
--     touches such a row), then copies a fast holder into
--     {p}lock_requests under its own id (negative, so the oldest), once:
--     a holder whose request row is gone was released by the statement
--     that deleted it, which also cleared the h_ columns before its
--     commit.
--   The idle-row upkeep turns a row back to slow = 0 only under the
--   identifier's InnoDB row lock, when nothing of it is left in InnoDB.
--
-- A restart empties the table and {p}incarnation with it. Sessions (in
-- InnoDB) record the incarnation they began in, and neither a renewal nor
-- the slow path's session check accepts a session of another one, so
-- every session is lost; the first session of the new incarnation marks
-- every identifier InnoDB still has state for as slow, then writes the
-- row, lockable only once the longest lease in use has passed (as
-- PostgreSQL's UNLOGGED lock state, migration 007 there).
--
-- The table's size limit is max_heap_table_size when it is created; the
-- statement before raises it for this connection (256 MiB: about 300,000
-- identifiers in use). A full table refuses new fast holders, and the slow
-- path reports the error.
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

ALTER TABLE {p}sessions ADD COLUMN incarnation BIGINT NOT NULL DEFAULT 0;

-- Identifiers with state in InnoDB (from before this migration) belong to
-- the slow path.
INSERT IGNORE INTO {p}lock_fast (kind, ns, name, fence, slow)
SELECT kind, ns, name, fence, 1 FROM {p}lock_idents
 WHERE n_r > 0 OR n_w > 0 OR n_p > 0 OR gated = 1;

INSERT IGNORE INTO {p}incarnation (one, id, lockable_from)
VALUES (1, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), 0);

UPDATE {p}sessions SET incarnation = (SELECT id FROM {p}incarnation);

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
