-- A message with a unique key nobody holds is enqueued in one statement
-- (message_insert_unique): the insert carries the key, a trigger before it
-- drops the row when the key exists (RAISE(IGNORE): no row, no error, the
-- statement returns nothing) and a trigger after it takes the key, naming
-- the new message. SQLite's single writer makes the check and the take
-- atomic. Before, this was a transaction of three statements, whose BEGIN
-- and COMMIT cost as much as the statements. A plain insert (no key)
-- passes both triggers' WHEN without running them.
ALTER TABLE {p}messages ADD COLUMN ukey TEXT;
ALTER TABLE {p}messages ADD COLUMN ukey_expires INTEGER;
-- statement
CREATE TRIGGER {p}messages_unique_held BEFORE INSERT ON {p}messages
WHEN NEW.ukey IS NOT NULL
 AND EXISTS (SELECT 1 FROM {p}unique_keys WHERE queue = NEW.queue AND ukey = NEW.ukey)
BEGIN
    SELECT RAISE(IGNORE);
END;
-- end
-- statement
CREATE TRIGGER {p}messages_unique_take AFTER INSERT ON {p}messages
WHEN NEW.ukey IS NOT NULL
BEGIN
    INSERT INTO {p}unique_keys (queue, ukey, message_id, expires_at)
    VALUES (NEW.queue, NEW.ukey, NEW.id, COALESCE(NEW.ukey_expires, 0));
END;
-- end
