-- Fewer index pages written per message on SQLite, where every page a
-- commit dirties is one more WAL frame (two writes) and the frames are
-- most of the cost of claiming and acknowledging a message:
-- - the due index holds only messages that were delayed (a delay, a
--   retry's backoff, a retry now): a message enqueued to run at once has
--   run_at = created_at (one statement's clock), was never "not yet due",
--   and claiming and finishing it no longer touch this index. The queries
--   that read it (queue_next_due, message_list_waiting) say
--   run_at > created_at, so SQLite uses it.
-- - the claims index goes: claims_stale and claims_by_session read the
--   running messages of each registered queue from the ready index, whose
--   (queue, state) prefix already finds them.
-- Claiming one message and finishing it now writes 8 pages instead of 11.
DROP INDEX {p}messages_claims;
DROP INDEX {p}messages_due;
CREATE INDEX {p}messages_due ON {p}messages (queue, state, run_at, id) WHERE state = 'R' AND run_at > created_at;
