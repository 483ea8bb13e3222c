-- A message finishes in one statement: marking it with its final state
-- (completed 'K', cancelled 'X', dead 'D') copies it to the history and
-- deletes it, in this trigger, within the statement's own transaction.
-- Before, a finish was a transaction of its own (mark, copy, delete), and
-- its BEGIN and COMMIT cost as much as the statements.
-- statement
CREATE TRIGGER {p}messages_finish AFTER UPDATE OF state ON {p}messages
WHEN NEW.state IN ('K', 'X', 'D')
BEGIN
    INSERT INTO {p}finished (id, queue, payload, priority, msg_key, attempt, max_attempts, last_error, created_at, finished_at, meta, state, kind, errors)
    VALUES (NEW.id, NEW.queue, NEW.payload, NEW.priority, NEW.msg_key, NEW.attempt, NEW.max_attempts, NEW.last_error, NEW.created_at,
            CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER), NEW.meta, NEW.state, NEW.kind, NEW.errors);
    DELETE FROM {p}messages WHERE id = NEW.id;
END;
-- end
