-- {p}turnstile_take: {p}turnstile_acquire without its exception block.
-- A PL/pgSQL block that catches an error runs in a subtransaction of its
-- own, entered on every wait behind a turnstile, which cost the
-- turnstile's statements about a fifth of their rate. A wait that runs out
-- raises lock_not_available (55P03) to the client, which then asks
-- the line whether it holds the turnstile after all (the error can be
-- raised as the grant comes: query turnstile_held) and goes to the table
-- either way. lock_timeout is set for the wait alone, and only for the
-- statement's transaction. {p}turnstile_acquire stays for clients of
-- before this migration.
-- statement
CREATE OR REPLACE FUNCTION {p}turnstile_take(k smallint, n bytea, m bytea, t1 integer, t2 integer, wait_ms integer,
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
        PERFORM pg_advisory_lock(t1, t2);
        PERFORM set_config('lock_timeout', prev, true);
        o_held := true;
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
