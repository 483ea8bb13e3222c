-- Fewer index entries written per message (see SQLite's migration of the
-- same number for the model). An UPDATE that changes an indexed column
-- (a claim changes the state) adds an entry to every index whose
-- predicate the new row meets, so:
-- - the due index holds only messages that were delayed (a delay, a
--   retry's backoff, a retry now): a message enqueued to run at once is
--   never "not yet due", and enqueueing and claiming it no longer add
--   entries here; the queries that read it (queue_next_due,
--   message_list_waiting) say run_at > created_at.
-- - the claims index goes: claims_stale and claims_by_session read the
--   running messages of each registered queue from the ready index.
-- A claim now adds two index entries (primary key, ready) instead of four.
DROP INDEX {p}messages_claims;
DROP INDEX {p}messages_due;
CREATE INDEX {p}messages_due ON {p}messages (queue, state, run_at, id) WHERE state = 'R' AND run_at > created_at;
