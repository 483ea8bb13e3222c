-- Turnstiles in the process (driver/sqlite/turnstile.go): a contender that
-- holds nothing may wait behind an identifier's turnstile past the 25 ms
-- after which others go to the lock table. Monitoring still lists it as
-- PENDING from one row here, written once its wait passes that bound and
-- deleted when its call ends (the lock_info_list query; the grant rule,
-- the deadlock detector and the hand-on never read this table), as
-- PostgreSQL's and MySQL's migration 029.
CREATE TABLE {p}lock_waits (
    session_id TEXT    NOT NULL,
    call_id    INTEGER NOT NULL,
    id         INTEGER NOT NULL,
    client_id  TEXT    NOT NULL,
    kind       INTEGER NOT NULL,
    ns         BLOB    NOT NULL,
    name       BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, call_id)
) WITHOUT ROWID;
