-- Periodic messages: one row per schedule, its last tick (microseconds)
-- that some process enqueued. A process enqueues a tick's message only in
-- the transaction that moves last_tick forward to it, so each tick is
-- enqueued once, whatever the number of processes.
CREATE TABLE {p}schedules (
    name       TEXT    NOT NULL PRIMARY KEY,
    last_tick  INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
