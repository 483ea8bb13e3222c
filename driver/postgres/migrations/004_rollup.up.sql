-- The per-minute roll-up of each queue, in the rows of queue_throughput
-- (one per queue and minute): beside the acknowledged and dead counts,
-- the retried ones; the handler durations counted in 16 fixed buckets
-- (d0: up to 1 ms, then 2, 5, 10, 20, 50, 100, 200, 500 ms, 1, 2, 5, 10,
-- 30, 60 s; d15: longer), added by every process's flush so that they
-- merge; and the backlog (ready, scheduled, retrying) sampled once in the
-- minute by the upkeep (NULL: not sampled).
ALTER TABLE {p}queue_throughput
    ADD COLUMN retried bigint NOT NULL DEFAULT 0,
    ADD COLUMN ready bigint,
    ADD COLUMN scheduled bigint,
    ADD COLUMN retrying bigint,
    ADD COLUMN d0 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d1 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d2 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d3 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d4 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d5 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d6 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d7 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d8 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d9 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d10 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d11 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d12 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d13 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d14 bigint NOT NULL DEFAULT 0,
    ADD COLUMN d15 bigint NOT NULL DEFAULT 0;
