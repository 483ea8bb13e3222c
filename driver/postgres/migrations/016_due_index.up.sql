-- Waiting messages by due time: see the SQLite migration of the same name.
CREATE INDEX {p}messages_due ON {p}messages (queue, state, run_at, id);
