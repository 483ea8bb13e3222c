-- Jobs: see the SQLite migration of the same name for the model.
ALTER TABLE {p}dead RENAME TO {p}finished;
ALTER TABLE {p}finished RENAME COLUMN failed_at TO finished_at;
ALTER TABLE {p}finished ADD COLUMN state text NOT NULL DEFAULT 'D';
ALTER TABLE {p}finished ADD COLUMN kind text;
ALTER TABLE {p}finished ADD COLUMN errors text;
DROP INDEX {p}dead_queue;
CREATE INDEX {p}finished_queue ON {p}finished (queue, state, id);
CREATE INDEX {p}finished_state ON {p}finished (state, finished_at);
CREATE INDEX {p}finished_kind ON {p}finished (kind, state, id) WHERE kind IS NOT NULL;
ALTER TABLE {p}messages ADD COLUMN kind text;
ALTER TABLE {p}messages ADD COLUMN errors text;
ALTER TABLE {p}messages ADD COLUMN cancel smallint NOT NULL DEFAULT 0;
