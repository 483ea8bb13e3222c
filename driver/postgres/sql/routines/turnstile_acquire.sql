-- {p}turnstile_acquire waits inside the server behind an identifier's
-- turnstile (an advisory lock) for at most wait_ms and then takes the lock
-- by the fast path's rule. A wait that ran out as the turnstile came
-- reports it held (found by a contender that waits on behind the
-- turnstile: the session took it again on its next call, and one release
-- left it held). {p}turnstile_take is the same without the exception
-- block.
-- statement
CREATE OR REPLACE FUNCTION {p}turnstile_acquire(k smallint, n bytea, m bytea, t1 integer, t2 integer, wait_ms integer,
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
            -- Waited wait_ms: the caller goes to the table, unless the
            -- lock came as the timeout fired (the timeout's error can be
            -- raised after the grant): then this session holds it, and
            -- says so, or it would hold it unknowingly and take it again
            -- (advisory locks count) on its next call.
            o_held := EXISTS (SELECT 1 FROM pg_locks l
                               WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.granted
                                 AND l.objsubid = 2 AND l.classid::bigint = (t1::bigint + 4294967296) % 4294967296
                                 AND l.objid::bigint = (t2::bigint + 4294967296) % 4294967296);
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
