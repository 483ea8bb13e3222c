-- Periodic messages: see the SQLite migration of the same name.
CREATE TABLE IF NOT EXISTS {p}schedules (
    name       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    last_tick  BIGINT      NOT NULL,
    updated_at BIGINT      NOT NULL,
    PRIMARY KEY (name)
) ENGINE=InnoDB;
