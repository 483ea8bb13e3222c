-- Queues: see the SQLite migration of the same name for the model. These
-- tables are logged: messages are durable.
CREATE TABLE {p}queues (
    name       text   NOT NULL PRIMARY KEY,
    created_at bigint NOT NULL
);
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
    created_at   bigint   NOT NULL
);
CREATE INDEX {p}messages_ready ON {p}messages (queue, state, priority, order_at, id);
CREATE INDEX {p}messages_key ON {p}messages (queue, msg_key, state) WHERE msg_key IS NOT NULL;
CREATE INDEX {p}messages_claims ON {p}messages (state, claim_until) WHERE state = 'C';
CREATE TABLE {p}dead (
    id           bigint   PRIMARY KEY,
    queue        text     NOT NULL,
    payload      bytea    NOT NULL,
    priority     integer  NOT NULL,
    msg_key      text,
    attempt      integer  NOT NULL,
    max_attempts integer  NOT NULL,
    last_error   text     NOT NULL,
    created_at   bigint   NOT NULL,
    failed_at    bigint   NOT NULL
);
CREATE INDEX {p}dead_queue ON {p}dead (queue, id);
-- A queue table churns: every message is inserted, updated and deleted.
-- Vacuum it after a few thousand dead rows, whatever its size, so that
-- claims do not walk long runs of dead index entries.
ALTER TABLE {p}messages SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
                             autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0,
                             autovacuum_analyze_threshold = 5000);
