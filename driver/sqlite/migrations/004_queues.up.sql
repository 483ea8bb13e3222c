-- Queues. messages holds only ready ('R') and claimed ('C') messages: an
-- acknowledged message is deleted, a dead one moves to dead, so the hot
-- table stays as small as the backlog. Messages are served by (priority,
-- order_at, id); order_at is the enqueue time plus delay, and stays put
-- when a message is retried in ordered or per-key mode (the retry holds
-- its place) or moves to the retry time in parallel mode (the back of the
-- queue). run_at is when the message may next be claimed.
CREATE TABLE {p}queues (
    name       TEXT    NOT NULL PRIMARY KEY,
    created_at INTEGER NOT NULL
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
    created_at   INTEGER NOT NULL
);
CREATE INDEX {p}messages_ready ON {p}messages (queue, state, priority, order_at, id);
CREATE INDEX {p}messages_key ON {p}messages (queue, msg_key, state) WHERE msg_key IS NOT NULL;
CREATE INDEX {p}messages_claims ON {p}messages (state, claim_until) WHERE state = 'C';
CREATE TABLE {p}dead (
    id           INTEGER PRIMARY KEY,
    queue        TEXT    NOT NULL,
    payload      BLOB    NOT NULL,
    priority     INTEGER NOT NULL,
    msg_key      TEXT,
    attempt      INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    last_error   TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    failed_at    INTEGER NOT NULL
);
CREATE INDEX {p}dead_queue ON {p}dead (queue, id);
