-- PostgreSQL: the notify slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds.

-- name: notify_max
SELECT MAX(id) FROM {p}notifications;

-- name: notify_read
-- The notifications after the cursor (the first argument; at most 1000 of
-- them) and those of the listed ids still missing below it, in one
-- statement, so from one snapshot, by id: a notification that committed
-- late comes before its sender's next one, read in the same go.
SELECT id, channel, payload
  FROM (SELECT id, channel, payload FROM {p}notifications WHERE id > $1 ORDER BY id LIMIT 1000) s
UNION ALL
SELECT id, channel, payload FROM {p}notifications WHERE id IN ({list2})
ORDER BY id;

-- name: notify_purge
-- Notifications older than $1 microseconds, and registrations that ran out
-- that long ago (of clients that died).
WITH gone AS (DELETE FROM {p}notify_pollers WHERE expires_at < {now} - $1)
DELETE FROM {p}notifications WHERE created_at < {now} - $1;

-- ---- notifications ----
-- NOTIFY reaches the clients that LISTEN. Clients behind a transaction
-- pooler without listen_dsn cannot: they read {p}notifications instead,
-- registered in {p}notify_pollers while they do.

-- only postgres: NOTIFY.
-- name: notify_send
-- NOTIFY, and, in the same statement (it rides in the caller's
-- transaction), the notification in {p}notifications while some client
-- reads from there. Arguments: the NOTIFY channel, the notification's
-- channel, its payload.
WITH ins AS (
    INSERT INTO {p}notifications (channel, payload, created_at)
    SELECT $2::text, $3::text, {now}
     WHERE EXISTS (SELECT 1 FROM {p}notify_pollers WHERE expires_at > {now})
)
SELECT pg_notify($1, $2::text || ' ' || $3::text);

-- only postgres: pollers stand in for LISTEN behind a pooler.
-- name: notify_poller_register
-- Arguments: client id, how long the registration runs (microseconds).
INSERT INTO {p}notify_pollers (client_id, expires_at) VALUES ($1, {now} + $2)
ON CONFLICT (client_id) DO UPDATE SET expires_at = EXCLUDED.expires_at;

-- only postgres: pollers stand in for LISTEN behind a pooler.
-- name: notify_poller_delete
DELETE FROM {p}notify_pollers WHERE client_id = $1;
