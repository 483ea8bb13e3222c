-- Waiting messages by due time: see the SQLite migration of the same name.
ALTER TABLE {p}messages ADD INDEX messages_due (queue, state, run_at, id);
