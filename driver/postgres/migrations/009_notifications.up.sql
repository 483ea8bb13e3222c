-- Notifications from a table, for clients behind a transaction pooler
-- without listen_dsn (LISTEN through the pooler hears nothing). Every sender
-- keeps its NOTIFY and, in the same statement, also inserts the notification
-- here, but only while some such client is registered in notify_pollers
-- with an unexpired registration: with none, nothing is written. Readers
-- follow the MySQL backend's: after a cursor, tracking the gaps of ids
-- allocated before commit (internal/sqldriver.NotifyReader). Logged, like
-- the queues: a notification is no lock state.
CREATE TABLE {p}notifications (
    id         bigserial PRIMARY KEY,
    channel    text   NOT NULL,
    payload    text   NOT NULL,
    created_at bigint NOT NULL
);
CREATE INDEX {p}notifications_created ON {p}notifications (created_at);
-- The clients that read {p}notifications, each until expires_at (the
-- clock in microseconds): renewed while they read, deleted when they stop.
CREATE TABLE {p}notify_pollers (
    client_id  text   NOT NULL PRIMARY KEY,
    expires_at bigint NOT NULL
);
