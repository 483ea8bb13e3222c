-- Per-minute counts of acknowledged and dead-lettered messages per queue,
-- flushed by each process every few seconds (never on the hot path).
CREATE TABLE {p}queue_throughput (
    queue  TEXT    NOT NULL,
    bucket INTEGER NOT NULL,
    acked  INTEGER NOT NULL,
    dead   INTEGER NOT NULL,
    PRIMARY KEY (queue, bucket)
) WITHOUT ROWID;
