-- MySQL/MariaDB: the notify slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds
-- (database clock). Bind variables are positional "?" only: a value
-- used twice is passed twice. Transactions run at READ COMMITTED (set
-- per connection): locking reads and writes see the latest committed
-- rows, and every plain read sees what was committed when it started.

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

-- ---- wake-ups ----
-- MySQL and MariaDB have no LISTEN/NOTIFY.
-- A listener keeps one connection in
--     SELECT seq, IF(seq <> last seen, 0, SLEEP(interval)) ...
-- A waker bumps seq inside its transaction and, after commit, interrupts
-- the listener's statement with KILL QUERY on the registered connection id.
-- The statement reads seq before it sleeps, so an interruption that lands
-- between two statements is not lost: the next statement sees the new seq
-- and returns at once. These statements run on the listener's and the
-- waker's connections, apart from the prepared set.

-- only mysql: no LISTEN/NOTIFY: wake-ups by KILL QUERY.
-- name: wake_register
-- Arguments: client id, connection id, connection id again.
INSERT INTO {p}wakeups (client_id, conn_id, seq, updated_at)
VALUES (?, ?, 0, {now})
ON DUPLICATE KEY UPDATE conn_id = ?, updated_at = {now};

-- only mysql: no LISTEN/NOTIFY: wake-ups by KILL QUERY.
-- name: wake_poll
-- Arguments: the last seq seen, the interval in seconds, client id.
SELECT seq, IF(seq <> ?, 0, SLEEP(?)) FROM {p}wakeups WHERE client_id = ?;

-- only mysql: no LISTEN/NOTIFY: wake-ups by KILL QUERY.
-- name: wake_one
-- Bumps one client's seq and reports its listener's connection id as the
-- insert id; 0 when the registration predates the server's start (its
-- connection id may now belong to somebody else: never interrupt it).
-- Arguments: server start in microseconds, client id.
UPDATE {p}wakeups
   SET seq = seq + 1, conn_id = LAST_INSERT_ID(IF(updated_at >= ?, conn_id, 0))
 WHERE client_id = ?;

-- only mysql: no LISTEN/NOTIFY: wake-ups by KILL QUERY.
-- name: wake_many
UPDATE {p}wakeups SET seq = seq + 1 WHERE client_id IN ({list});

-- only mysql: no LISTEN/NOTIFY: wake-ups by KILL QUERY.
-- name: wake_conns
-- Arguments: server start in microseconds, then the client ids.
SELECT conn_id FROM {p}wakeups WHERE updated_at >= ? AND client_id IN ({list});

-- only mysql: no LISTEN/NOTIFY: wake-ups by KILL QUERY.
-- name: wake_unregister
DELETE FROM {p}wakeups WHERE client_id = ?;

-- only mysql: no LISTEN/NOTIFY: wake-ups by KILL QUERY.
-- name: wake_purge_stale
-- Registrations from before the server's last start.
DELETE FROM {p}wakeups WHERE updated_at < ?;

-- only mysql: no LISTEN/NOTIFY: wake-ups by KILL QUERY.
-- name: wake_all_clients
-- Every registered client: a notification wakes them all.
SELECT client_id FROM {p}wakeups;
