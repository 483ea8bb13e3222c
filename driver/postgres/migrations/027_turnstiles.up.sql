-- Waiters that queue inside the server (turnstiles). A write lock's
-- contenders that have a direct connection of their own (a session's
-- line, not the pool and never a transaction pooler's) first wait in
-- PostgreSQL's own lock queue for a session-level advisory lock on the
-- identifier, the turnstile, held by whoever came through it until that
-- one releases: the lock manager wakes the next in microseconds, where a
-- grant through the table costs a request, a release with its hand-off
-- and a NOTIFY, each serialized on the identifier's row.
--
-- The turnstile decides nothing. The table stays the one truth about who
-- holds what: whoever gets the turnstile then takes the lock by the
-- uncontended path's rule (the identifier free, nobody waiting in the
-- table, no gate), and one that finds it taken waits in the table as any
-- other request does, keeping the turnstile. A connection lost releases
-- its turnstiles, never a lock; a turnstile kept by mistake only makes
-- the next contender wait wait_ms in the server before it goes to the
-- table. Bounded waits keep the deadlock detector whole: a cycle through
-- turnstiles turns within wait_ms into waits in the table, where the
-- detector sees it.
--
-- {p}turnstile_acquire: the turnstile (t1, t2: the two-key advisory lock
-- form, apart from the one-key locks of transaction-scoped gates), waited
-- for at most wait_ms (0: only when it is free), then the lock as {p}fast_acquire's statement takes
-- it, for a writer. The waiting is out of the statement's snapshot: a
-- new statement in the function reads the row as it is now, and the
-- upsert waits for a release that let the turnstile go before its commit
-- and then decides on the row it committed. o_held: the caller holds the
-- turnstile (it must let it go); o_waited: it was taken by someone when
-- asked for; o_id NULL: the lock was not granted.
-- statement
CREATE FUNCTION {p}turnstile_acquire(k smallint, n bytea, m bytea, t1 integer, t2 integer, wait_ms integer,
                                     sess text, client text, call bigint,
                                     OUT o_id bigint, OUT o_token bigint, OUT o_inc bigint,
                                     OUT o_held boolean, OUT o_waited boolean)
LANGUAGE plpgsql AS $$
DECLARE
    prev text;
BEGIN
    o_held := pg_try_advisory_lock(t1, t2);
    o_waited := NOT o_held;
    IF NOT o_held AND wait_ms > 0 THEN
        prev := current_setting('lock_timeout');
        PERFORM set_config('lock_timeout', wait_ms || 'ms', true);
        BEGIN
            PERFORM pg_advisory_lock(t1, t2);
            o_held := true;
        EXCEPTION WHEN lock_not_available THEN
            -- Waited wait_ms: the caller goes to the table.
        END;
        PERFORM set_config('lock_timeout', prev, true);
    END IF;
    IF NOT o_held THEN
        RETURN;
    END IF;
    INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p, h_id, h_session, h_client, h_mode, h_call, h_token, h_at)
    SELECT k, n, m, x.t, 0, 1, 0, nextval('{p}lock_requests_id_seq'), sess, client, 'W', call, x.t, x.t
      FROM (SELECT (extract(epoch from clock_timestamp()) * 1000000)::bigint AS t) x
    ON CONFLICT (kind, ns, name) DO UPDATE
       SET fence = li.fence + 1, n_r = excluded.n_r, n_w = excluded.n_w,
           h_id = excluded.h_id, h_session = excluded.h_session, h_client = excluded.h_client,
           h_mode = excluded.h_mode, h_call = excluded.h_call, h_token = li.fence + 1, h_at = excluded.h_at
     WHERE li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0 AND NOT li.gated
    RETURNING li.h_id, li.h_token INTO o_id, o_token;
    o_inc := (SELECT id FROM {p}incarnation);
END
$$;
-- end
