-- Lock state is UNLOGGED: it is not written to the WAL, so a lock operation
-- never waits for a disk flush. After a crash PostgreSQL empties these
-- tables; every client then finds its sessions gone at its next heartbeat
-- and reports them lost, which is the truth. Fencing stays monotonic: a new
-- lock row starts its counter at the clock in microseconds.
CREATE UNLOGGED TABLE {p}sessions (
    id         text    NOT NULL PRIMARY KEY,
    client_id  text    NOT NULL,
    host       text    NOT NULL,
    pid        integer NOT NULL,
    name       text    NOT NULL,
    created_at bigint  NOT NULL,
    expires_at bigint  NOT NULL
);
CREATE INDEX {p}sessions_client ON {p}sessions (client_id);
CREATE INDEX {p}sessions_expires ON {p}sessions (expires_at);

CREATE UNLOGGED TABLE {p}lock_idents (
    kind  smallint NOT NULL,
    ns    bytea    NOT NULL,
    name  bytea    NOT NULL,
    fence bigint   NOT NULL,
    n_r   bigint   NOT NULL,
    n_w   bigint   NOT NULL,
    n_p   bigint   NOT NULL,
    PRIMARY KEY (kind, ns, name)
);

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

CREATE TABLE {p}meta (
    k text NOT NULL PRIMARY KEY,
    v text NOT NULL
);
INSERT INTO {p}meta (k, v) VALUES ('deadlock', '');
