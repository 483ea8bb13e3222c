-- Concurrency and rate limits of a queue (Client.SetQueueLimits).
-- limits is the queue's limits as a JSON object, NULL for none: the
-- parallel claim (claim_ids_parallel) refuses a queue that has any, so its
-- claims go through the limited path, under the queue's row lock.
ALTER TABLE {p}queues ADD COLUMN limits TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL;

-- Starts (claims that start a run) of rate-limited queues, counted per
-- partition ('' for the whole queue) and per time bucket ending at
-- bucket_end (microseconds); buckets that can no longer overlap a window
-- are deleted by the claims.
CREATE TABLE IF NOT EXISTS {p}queue_starts (
    queue      VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    part       VARBINARY(64) NOT NULL,
    bucket_end BIGINT      NOT NULL,
    n          BIGINT      NOT NULL,
    PRIMARY KEY (queue, part, bucket_end)
) ENGINE=InnoDB;
