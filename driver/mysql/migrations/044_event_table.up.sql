-- The table as the subscription named it (see PostgreSQL's migration of
-- the same name, where it differs from table_name). Here the triggers
-- write the name the subscription gave already; the column keeps the
-- registry the same in every dialect. '' for subscriptions made before.
ALTER TABLE {p}subscriptions ADD COLUMN subscribed_as VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '';
