-- Table-change subscriptions. A subscribed table gets baton's triggers,
-- which read this registry: adding or removing a subscription never
-- rewrites them. Each matching subscription gets one event, a message of
-- the queue 'ev:' || name, written in the same transaction as the change.
CREATE TABLE {p}subscriptions (
    name         TEXT    NOT NULL PRIMARY KEY,
    table_name   TEXT    NOT NULL,
    actions      TEXT    NOT NULL,
    max_attempts INTEGER NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX {p}subscriptions_table ON {p}subscriptions (table_name);
