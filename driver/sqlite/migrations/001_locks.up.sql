CREATE TABLE {p}sessions (
    id         TEXT    NOT NULL PRIMARY KEY,
    client_id  TEXT    NOT NULL,
    host       TEXT    NOT NULL,
    pid        INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX {p}sessions_client ON {p}sessions (client_id);
CREATE INDEX {p}sessions_expires ON {p}sessions (expires_at);

CREATE TABLE {p}lock_idents (
    kind  INTEGER NOT NULL,
    ns    BLOB    NOT NULL,
    name  BLOB    NOT NULL,
    fence INTEGER NOT NULL,
    n_r   INTEGER NOT NULL,
    n_w   INTEGER NOT NULL,
    n_p   INTEGER NOT NULL,
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
