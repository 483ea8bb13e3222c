-- Notifications, read by listeners after a cursor. Ids are allocated before
-- commit, so listeners track gaps (internal/sqldriver.NotifyReader).
CREATE TABLE IF NOT EXISTS {p}notifications (
    id         BIGINT      NOT NULL AUTO_INCREMENT,
    channel    VARCHAR(80) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    payload    TEXT        CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    created_at BIGINT      NOT NULL,
    PRIMARY KEY (id),
    KEY notifications_created (created_at)
) ENGINE=InnoDB;
