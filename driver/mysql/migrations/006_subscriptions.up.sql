-- Table-change subscriptions: see the SQLite migration of the same name.
CREATE TABLE IF NOT EXISTS {p}subscriptions (
    name         VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    table_name   VARCHAR(64)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    actions      VARCHAR(3)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    max_attempts INT          NOT NULL,
    created_at   BIGINT       NOT NULL,
    PRIMARY KEY (name),
    KEY subscriptions_table (table_name)
) ENGINE=InnoDB;
