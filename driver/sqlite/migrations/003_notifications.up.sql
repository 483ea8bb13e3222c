-- Notifications, read by listeners after a cursor. SQLite has one writer at
-- a time, so ids are committed in order; AUTOINCREMENT keeps ids from being
-- reused after old rows are purged.
CREATE TABLE {p}notifications (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    channel    TEXT    NOT NULL,
    payload    TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX {p}notifications_created ON {p}notifications (created_at);
