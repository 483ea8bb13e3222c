-- Per-minute counts of acknowledged and dead-lettered messages per queue,
-- flushed by each process every few seconds (never on the hot path).
CREATE TABLE IF NOT EXISTS {p}queue_throughput (
    queue  VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    bucket BIGINT      NOT NULL,
    acked  BIGINT      NOT NULL,
    dead   BIGINT      NOT NULL,
    PRIMARY KEY (queue, bucket)
) ENGINE=InnoDB;
