-- Unique messages: one row per (queue, unique key) naming the message that
-- holds the key. A key without a period is held while its message waits or
-- runs (the row is taken over once the message is gone); a key with a
-- period is held until expires_at (microseconds), whatever the message does.
CREATE TABLE {p}unique_keys (
    queue      TEXT    NOT NULL,
    ukey       TEXT    NOT NULL,
    message_id INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (queue, ukey)
);
CREATE INDEX {p}unique_keys_expires ON {p}unique_keys (expires_at) WHERE expires_at > 0;
