-- The per-minute roll-up of each queue, in the rows of queue_throughput
-- (one per queue and minute): beside the acknowledged and dead counts,
-- the retried ones; the handler durations counted in 16 fixed buckets
-- (d0: up to 1 ms, then 2, 5, 10, 20, 50, 100, 200, 500 ms, 1, 2, 5, 10,
-- 30, 60 s; d15: longer), added by every process's flush so that they
-- merge; and the backlog (ready, scheduled, retrying) sampled once in the
-- minute by the upkeep (NULL: not sampled).
ALTER TABLE {p}queue_throughput ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN ready INTEGER;
ALTER TABLE {p}queue_throughput ADD COLUMN scheduled INTEGER;
ALTER TABLE {p}queue_throughput ADD COLUMN retrying INTEGER;
ALTER TABLE {p}queue_throughput ADD COLUMN d0 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d1 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d2 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d3 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d4 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d5 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d6 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d7 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d8 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d9 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d10 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d11 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d12 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d13 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d14 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}queue_throughput ADD COLUMN d15 INTEGER NOT NULL DEFAULT 0;
