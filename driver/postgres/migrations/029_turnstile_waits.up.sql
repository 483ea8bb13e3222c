-- A contender that holds nothing may wait behind an identifier's
-- turnstile past the 25 ms after which others go to the lock table (no
-- cycle can pass through its wait). Monitoring still lists it as PENDING
-- from one row here, written once its wait passes that bound and deleted
-- when its call ends (the lock_info_list query; the grant rule, the
-- deadlock detector and the hand-on never read this table). UNLOGGED, as
-- the lock state: a crash empties it with the sessions it described.
CREATE UNLOGGED TABLE {p}lock_waits (
    session_id text     NOT NULL,
    call_id    bigint   NOT NULL,
    id         bigint   NOT NULL,
    client_id  text     NOT NULL,
    kind       smallint NOT NULL,
    ns         bytea    NOT NULL,
    name       bytea    NOT NULL,
    created_at bigint   NOT NULL,
    PRIMARY KEY (session_id, call_id)
);
