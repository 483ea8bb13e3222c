-- Concurrency and rate limits of a queue (Client.SetQueueLimits).
-- limits is the queue's limits as a JSON object, NULL for none: a claim in
-- one statement (claim_parallel, claim_candidates) refuses a queue that
-- has any, so its claims go through the limited path, under the queue's
-- row lock.
ALTER TABLE {p}queues ADD COLUMN limits TEXT;

-- Starts (claims that start a run) of rate-limited queues, counted per
-- partition ('' for the whole queue) and per time bucket ending at
-- bucket_end (microseconds); buckets that can no longer overlap a window
-- are deleted by the claims.
CREATE TABLE {p}queue_starts (
    queue      TEXT    NOT NULL,
    part       TEXT    NOT NULL,
    bucket_end INTEGER NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (queue, part, bucket_end)
);
