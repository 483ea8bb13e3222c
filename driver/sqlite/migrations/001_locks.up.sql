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
