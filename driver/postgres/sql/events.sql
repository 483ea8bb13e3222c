-- PostgreSQL: the events slice's queries.
-- Each backend has the same files in sql/: a query several dialects have
-- has one name and one file in all of them; one that only some have is
-- marked "-- only <dialects>: why" (driver/queries_test.go checks both).
-- {p} is the table prefix, {now} the current time in microseconds.

-- name: subscription_insert
INSERT INTO {p}subscriptions (name, table_name, subscribed_as, actions, max_attempts, created_at) VALUES ($1, $2, $3, $4, $5, {now});

-- name: subscription_delete
DELETE FROM {p}subscriptions WHERE name = $1;

-- name: subscription_get
SELECT name, table_name, COALESCE(NULLIF(subscribed_as, ''), table_name), actions, max_attempts, created_at FROM {p}subscriptions WHERE name = $1;

-- name: subscription_list
SELECT name, table_name, COALESCE(NULLIF(subscribed_as, ''), table_name), actions, max_attempts, created_at FROM {p}subscriptions ORDER BY name;

-- name: subscription_count_table
SELECT COUNT(*) FROM {p}subscriptions WHERE table_name = $1;
