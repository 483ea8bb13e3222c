-- Unique messages: one row per (queue, unique key) naming the message that
-- holds the key. A key without a period is held while its message waits or
-- runs (the row is taken over once the message is gone); a key with a
-- period is held until expires_at (microseconds), whatever the message does.
CREATE TABLE IF NOT EXISTS {p}unique_keys (
    queue      VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    ukey       VARBINARY(300) NOT NULL,
    message_id BIGINT       NOT NULL,
    expires_at BIGINT       NOT NULL,
    PRIMARY KEY (queue, ukey),
    KEY unique_keys_expires (expires_at)
) ENGINE=InnoDB;
