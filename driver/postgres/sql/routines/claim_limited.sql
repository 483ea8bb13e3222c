-- {p}claim_limited is the claim of a queue whose limits are a concurrency
-- and/or a rate without partitions (migration 002), in one round trip:
-- the queue's row locked (it serializes the queue's limited claims with
-- queue_limits_lock's), each later statement reads a snapshot of its own,
-- taken after the lock, so the running messages and the rate's buckets it
-- counts include every claim committed before it; then it claims what the
-- limits allow and counts those starts, as the engine's limited claim
-- does (internal/queue/limits.go: the same buckets of per/16, counted
-- while they overlap the window (now-per, now]). It returns no row when
-- the queue is paused, has no such limits (partitions, none) or no room:
-- the engine then takes its limited claim, which knows why. Arguments as
-- claim_parallel's.
-- statement
CREATE OR REPLACE FUNCTION {p}claim_limited(sess text, mode integer, lease bigint, q text, lim integer, k text)
RETURNS SETOF {p}messages
LANGUAGE plpgsql AS $$
DECLARE
    l jsonb;
    t bigint;
    per bigint;
    width bigint;
    budget integer := lim;
    room bigint;
    n integer;
    stale boolean := false;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT limits::jsonb INTO l FROM {p}queues WHERE name = q AND paused = 0 FOR UPDATE;
    IF l IS NULL OR l ? 'partition_by' THEN
        RETURN;
    END IF;
    t := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
    IF l ? 'concurrency' THEN
        SELECT (l->>'concurrency')::bigint - count(*) INTO room FROM {p}messages WHERE queue = q AND state = 'C';
        budget := LEAST(budget, room);
    END IF;
    IF l ? 'rate' THEN
        per := (l->>'per_ns')::bigint / 1000;
        width := GREATEST(per / 16, 1);
        SELECT (l->>'rate')::bigint - COALESCE(sum(s.n) FILTER (WHERE s.bucket_end > t - per), 0),
               COALESCE(bool_or(s.bucket_end <= t - per), false)
          INTO room, stale FROM {p}queue_starts s WHERE s.queue = q;
        budget := LEAST(budget, room);
    END IF;
    IF budget <= 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    UPDATE {p}messages
       SET state = 'C', claimed_by = sess, claim_mode = mode, claim_until = t + lease, attempt = attempt + 1
     WHERE id IN (SELECT m.id FROM {p}messages m
                   WHERE m.queue = q AND m.state = 'R' AND m.run_at <= t AND (k = '' OR m.kind = k)
                   ORDER BY m.priority, m.order_at, m.id LIMIT budget
                     FOR UPDATE SKIP LOCKED)
    RETURNING {p}messages.*;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 AND l ? 'rate' THEN
        -- The starts, in the bucket of t.
        INSERT INTO {p}queue_starts AS s (queue, part, bucket_end, n) VALUES (q, '', (t / width + 1) * width, n)
        ON CONFLICT (queue, part, bucket_end) DO UPDATE SET n = s.n + excluded.n;
    END IF;
    IF stale THEN
        -- Buckets that no window overlaps any more.
        DELETE FROM {p}queue_starts WHERE queue = q AND bucket_end <= t - per;
    END IF;
END
$$;
-- end
