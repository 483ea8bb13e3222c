-- Jobs: the whole life of a message. The dead letters become the history
-- of every finished message: state 'D' (dead), 'K' (completed) or 'X'
-- (cancelled), kept for a retention period and pruned in batches by a
-- maintenance service; messages keeps only the backlog and what runs.
-- kind names a message's worker (NULL: untyped), errors is the JSON array
-- of its failed attempts (NULL: none), cancel is 1 once a running message
-- was asked to stop (its worker then finishes it as cancelled).
ALTER TABLE {p}dead RENAME TO {p}finished;
ALTER TABLE {p}finished RENAME COLUMN failed_at TO finished_at;
ALTER TABLE {p}finished ADD COLUMN state TEXT NOT NULL DEFAULT 'D';
ALTER TABLE {p}finished ADD COLUMN kind TEXT;
ALTER TABLE {p}finished ADD COLUMN errors TEXT;
DROP INDEX {p}dead_queue;
CREATE INDEX {p}finished_queue ON {p}finished (queue, state, id);
CREATE INDEX {p}finished_state ON {p}finished (state, finished_at);
CREATE INDEX {p}finished_kind ON {p}finished (kind, state, id) WHERE kind IS NOT NULL;
ALTER TABLE {p}messages ADD COLUMN kind TEXT;
ALTER TABLE {p}messages ADD COLUMN errors TEXT;
ALTER TABLE {p}messages ADD COLUMN cancel INTEGER NOT NULL DEFAULT 0;
