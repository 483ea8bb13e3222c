-- A paused queue (1) keeps its messages; no claim takes them until resumed.
ALTER TABLE {p}queues ADD COLUMN paused smallint NOT NULL DEFAULT 0;
