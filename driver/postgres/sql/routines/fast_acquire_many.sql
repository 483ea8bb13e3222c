-- {p}fast_acquire_many takes several names of one namespace in one mode
-- for a session on the uncontended path (inline holders), all or none,
-- never on a gated identifier: a name it cannot take there leaves the call
-- to the engine's slow path.
-- statement
CREATE OR REPLACE FUNCTION {p}fast_acquire_many(k smallint, n bytea, names bytea[], nr bigint, nw bigint,
                                     sess text, client text, m text, call bigint)
RETURNS TABLE (o_name bytea, o_id bigint, o_token bigint, o_incarnation bigint, o_inline boolean)
LANGUAGE plpgsql AS $$
DECLARE
    r_name  bytea[];
    r_id    bigint[];
    r_token bigint[];
    inc     bigint;
    inline  boolean := true;
    now_us  bigint := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
BEGIN
    WITH li AS (
        INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p, h_id, h_session, h_client, h_mode, h_call, h_token, h_at)
        SELECT k, n, x, now_us, nr, nw, 0, nextval('{p}lock_requests_id_seq'), sess, client, m, call, now_us, now_us
          FROM unnest(names) AS x
        ON CONFLICT (kind, ns, name) DO UPDATE
           SET fence = li.fence + 1, n_r = excluded.n_r, n_w = excluded.n_w,
               h_id = excluded.h_id, h_session = excluded.h_session, h_client = excluded.h_client,
               h_mode = excluded.h_mode, h_call = excluded.h_call, h_token = li.fence + 1, h_at = excluded.h_at
         WHERE li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0 AND NOT li.gated
        RETURNING li.name AS lname, li.h_id AS lid, li.h_token AS ltoken)
    SELECT array_agg(li.lname), array_agg(li.lid), array_agg(li.ltoken) INTO r_name, r_id, r_token FROM li;
    IF coalesce(cardinality(r_id), 0) < cardinality(names) THEN
        -- Some name is held: undo the inline holders just taken, then the
        -- way of migration 011 for every name.
        UPDATE {p}lock_idents li
           SET n_r = li.n_r - nr, n_w = li.n_w - nw,
               h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_token = NULL, h_at = NULL
         WHERE li.kind = k AND li.ns = n AND li.h_id = ANY (r_id);
        inline := false;
        BEGIN
            WITH li AS (
                INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p)
                SELECT k, n, x, now_us, nr, nw, 0 FROM unnest(names) AS x
                ON CONFLICT (kind, ns, name) DO UPDATE
                   SET fence = li.fence + 1, n_r = li.n_r + excluded.n_r, n_w = li.n_w + excluded.n_w
                 WHERE li.n_p = 0 AND li.n_w = 0 AND (excluded.n_w = 0 OR li.n_r = 0) AND NOT li.gated
                RETURNING li.name AS lname, li.fence AS lfence),
            ins AS (
                INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
                SELECT sess, client, k, n, li.lname, m, 'G', call, li.lfence, now_us, now_us FROM li
                RETURNING {p}lock_requests.name AS rname, {p}lock_requests.id AS rid, {p}lock_requests.token AS rtoken)
            SELECT array_agg(ins.rname), array_agg(ins.rid), array_agg(ins.rtoken) INTO r_name, r_id, r_token FROM ins;
            IF coalesce(cardinality(r_id), 0) < cardinality(names) THEN
                RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'baton: not every name is free';
            END IF;
        EXCEPTION WHEN raise_exception THEN
            RETURN;
        END;
    END IF;
    SELECT i.id INTO inc FROM {p}incarnation i;
    RETURN QUERY SELECT u.a, u.b, u.c, inc, inline FROM unnest(r_name, r_id, r_token) AS u(a, b, c);
END
$$;
-- end
