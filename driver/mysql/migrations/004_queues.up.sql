-- Queues: see the SQLite migration of the same name for the model.
CREATE TABLE IF NOT EXISTS {p}queues (
    name       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at BIGINT      NOT NULL,
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
    PRIMARY KEY (id),
    KEY messages_ready (queue, state, priority, order_at, id),
    KEY messages_key (queue, msg_key, state),
    KEY messages_claims (state, claim_until)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS {p}dead (
    id           BIGINT       NOT NULL,
    queue        VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    payload      LONGBLOB     NOT NULL,
    priority     INT          NOT NULL,
    msg_key      VARBINARY(255),
    attempt      INT          NOT NULL,
    max_attempts INT          NOT NULL,
    last_error   TEXT         CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    created_at   BIGINT       NOT NULL,
    failed_at    BIGINT       NOT NULL,
    PRIMARY KEY (id),
    KEY dead_queue (queue, id)
) ENGINE=InnoDB;
