-- The lock state's incarnation. Like the lock tables this one row is
-- UNLOGGED: crash recovery empties it together with them. The first session
-- after that writes a new row, whose id no earlier session knows (their
-- grants are refused) and whose lockable_from (now plus the longest lease in
-- use) is when holders of the lost state have all stopped counting
-- themselves holders; no lock is granted before it. A clean restart keeps
-- the row, the locks and the sessions, and changes nothing.
CREATE UNLOGGED TABLE {p}incarnation (
    one           smallint NOT NULL PRIMARY KEY CHECK (one = 1),
    id            bigint   NOT NULL,
    lockable_from bigint   NOT NULL
);
INSERT INTO {p}incarnation (one, id, lockable_from)
VALUES (1, (extract(epoch from clock_timestamp()) * 1000000)::bigint, 0);
