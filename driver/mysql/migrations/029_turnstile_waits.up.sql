-- A contender that holds nothing may wait behind an identifier's
-- turnstile past the 25 ms after which others go to the lock table (no
-- cycle can pass through its wait). Monitoring still lists it as PENDING
-- from one row here, written once its wait passes that bound and deleted
-- when its call ends (the lock_info_list query; the grant rule, the
-- deadlock detector and the hand-on never read this table). MEMORY, as
-- lock_fast: no redo-log flush, emptied by a restart with the sessions it
-- described.
CREATE TABLE IF NOT EXISTS {p}lock_waits (
    session_id VARCHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    call_id    BIGINT         NOT NULL,
    id         BIGINT         NOT NULL,
    client_id  VARCHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    kind       INT            NOT NULL,
    ns         VARBINARY(256) NOT NULL,
    name       VARBINARY(256) NOT NULL,
    created_at BIGINT         NOT NULL,
    PRIMARY KEY USING BTREE (session_id, call_id)
) ENGINE=MEMORY;
