-- The per-minute roll-up of each queue, in the rows of queue_throughput
-- (one per queue and minute): beside the acknowledged and dead counts,
-- the retried ones; the handler durations counted in 16 fixed buckets
-- (d0: up to 1 ms, then 2, 5, 10, 20, 50, 100, 200, 500 ms, 1, 2, 5, 10,
-- 30, 60 s; d15: longer), added by every process's flush so that they
-- merge; and the backlog (ready, scheduled, retrying) sampled once in the
-- minute by the upkeep (NULL: not sampled).
ALTER TABLE {p}queue_throughput
    ADD COLUMN retried BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN ready BIGINT,
    ADD COLUMN scheduled BIGINT,
    ADD COLUMN retrying BIGINT,
    ADD COLUMN d0 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d1 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d2 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d3 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d4 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d5 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d6 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d7 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d8 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d9 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d10 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d11 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d12 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d13 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d14 BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN d15 BIGINT NOT NULL DEFAULT 0;
