-- SQLite: the notify slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds.
-- Transactions start with BEGIN IMMEDIATE, so the database is locked for
-- writing from the first statement: row locks are not needed.

-- name: notify_max
SELECT MAX(id) FROM {p}notifications;

-- name: notify_read
-- The notifications after the cursor (the first argument; at most 1000 of
-- them) and those of the listed ids still missing below it, in one
-- statement, so from one snapshot, by id: a notification that committed
-- late comes before its sender's next one, read in the same go.
SELECT id, channel, payload
  FROM (SELECT id, channel, payload FROM {p}notifications WHERE id > ? ORDER BY id LIMIT 1000) s
UNION ALL
SELECT id, channel, payload FROM {p}notifications WHERE id IN ({list})
ORDER BY id;

-- name: notify_purge
DELETE FROM {p}notifications WHERE created_at < {now} - ?;

-- only sqlite, mysql: PostgreSQL writes the row in notify_send.
-- name: notify_insert
INSERT INTO {p}notifications (channel, payload, created_at) VALUES (?, ?, {now});
