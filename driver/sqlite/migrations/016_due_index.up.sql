-- Waiting messages by due time: the next due time of a queue (queue_next_due,
-- on every claim that finds nothing ready) and the pages of scheduled and
-- retrying messages read this index instead of every waiting message.
CREATE INDEX {p}messages_due ON {p}messages (queue, state, run_at, id);
