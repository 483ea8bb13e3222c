-- Periodic messages: see the SQLite migration of the same name.
CREATE TABLE {p}schedules (
    name       text   NOT NULL PRIMARY KEY,
    last_tick  bigint NOT NULL,
    updated_at bigint NOT NULL
);
