-- MySQL-only statements, with no counterpart in the other dialects (so
-- they live apart from queries.sql, whose names are the same in every
-- dialect): the wake-up mechanism and the settled status read.
--
-- Wake-ups (MySQL and MariaDB have no LISTEN/NOTIFY).
-- A listener keeps one connection in
--     SELECT seq, IF(seq <> last seen, 0, SLEEP(interval)) ...
-- A waker bumps seq inside its transaction and, after commit, interrupts
-- the listener's statement with KILL QUERY on the registered connection id.
-- The statement reads seq before it sleeps, so an interruption that lands
-- between two statements is not lost: the next statement sees the new seq
-- and returns at once.

-- name: wake_register
-- Arguments: client id, connection id, connection id again.
INSERT INTO {p}wakeups (client_id, conn_id, seq, updated_at)
VALUES (?, ?, 0, {now})
ON DUPLICATE KEY UPDATE conn_id = ?, updated_at = {now};

-- name: wake_poll
-- Arguments: the last seq seen, the interval in seconds, client id.
SELECT seq, IF(seq <> ?, 0, SLEEP(?)) FROM {p}wakeups WHERE client_id = ?;

-- name: wake_one
-- Bumps one client's seq and reports its listener's connection id as the
-- insert id; 0 when the registration predates the server's start (its
-- connection id may now belong to somebody else: never interrupt it).
-- Arguments: server start in microseconds, client id.
UPDATE {p}wakeups
   SET seq = seq + 1, conn_id = LAST_INSERT_ID(IF(updated_at >= ?, conn_id, 0))
 WHERE client_id = ?;

-- name: wake_many
UPDATE {p}wakeups SET seq = seq + 1 WHERE client_id IN ({list});

-- name: wake_conns
-- Arguments: server start in microseconds, then the client ids.
SELECT conn_id FROM {p}wakeups WHERE updated_at >= ? AND client_id IN ({list});

-- name: wake_unregister
DELETE FROM {p}wakeups WHERE client_id = ?;

-- name: wake_purge_stale
-- Registrations from before the server's last start.
DELETE FROM {p}wakeups WHERE updated_at < ?;

-- name: wake_all_clients
-- Every registered client: a notification wakes them all.
SELECT client_id FROM {p}wakeups;
