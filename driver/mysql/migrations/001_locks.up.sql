-- MySQL 8.0+ / MariaDB 10.6+ schema for sessions and locks.
-- InnoDB everywhere: baton needs row locks and transactions. Lock
-- identifiers are VARBINARY so that comparisons are exact byte comparisons
-- (no collation, no trailing-space padding). Times are BIGINT microseconds
-- from the database clock. DDL is not transactional in MySQL, so every
-- statement is idempotent and a migration interrupted halfway can run again.

CREATE TABLE IF NOT EXISTS {p}sessions (
    id         VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    client_id  VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    host       BLOB        NOT NULL,
    pid        BIGINT      NOT NULL,
    name       BLOB        NOT NULL,
    created_at BIGINT      NOT NULL,
    expires_at BIGINT      NOT NULL,
    PRIMARY KEY (id),
    KEY sessions_client (client_id),
    KEY sessions_expires (expires_at)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS {p}lock_idents (
    kind  INT            NOT NULL,
    ns    VARBINARY(256) NOT NULL,
    name  VARBINARY(256) NOT NULL,
    fence BIGINT         NOT NULL,
    n_r   BIGINT         NOT NULL,
    n_w   BIGINT         NOT NULL,
    n_p   BIGINT         NOT NULL,
    PRIMARY KEY (kind, ns, name)
) ENGINE=InnoDB;

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
    PRIMARY KEY (id),
    KEY lock_requests_ident (kind, ns, name, id),
    KEY lock_requests_session (session_id, kind, ns, name),
    -- MySQL has no partial indexes: the pending index covers every status.
    KEY lock_requests_pending (status, kind, ns, name)
) ENGINE=InnoDB;

-- Rows that serialize work across processes with SELECT ... FOR UPDATE.
CREATE TABLE IF NOT EXISTS {p}meta (
    k VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    v BIGINT      NOT NULL,
    PRIMARY KEY (k)
) ENGINE=InnoDB;

INSERT IGNORE INTO {p}meta (k, v) VALUES ('deadlock', 0);

-- Wake-ups (MySQL has no LISTEN/NOTIFY): each listening client registers
-- the id of its listener connection; a waker bumps seq and interrupts the
-- listener's SLEEP with KILL QUERY.
CREATE TABLE IF NOT EXISTS {p}wakeups (
    client_id  VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    conn_id    BIGINT      NOT NULL,
    seq        BIGINT      NOT NULL,
    updated_at BIGINT      NOT NULL,
    PRIMARY KEY (client_id)
) ENGINE=InnoDB;
