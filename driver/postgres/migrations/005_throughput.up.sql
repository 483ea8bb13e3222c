-- Per-minute counts of acknowledged and dead-lettered messages per queue,
-- flushed by each process every few seconds (never on the hot path).
CREATE TABLE {p}queue_throughput (
    queue  text   NOT NULL,
    bucket bigint NOT NULL,
    acked  bigint NOT NULL,
    dead   bigint NOT NULL,
    PRIMARY KEY (queue, bucket)
);
