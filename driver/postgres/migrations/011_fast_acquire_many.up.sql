-- {p}fast_acquire_many is the uncontended path for several names of one
-- namespace in one call, in one round trip: every identifier's conditional
-- upsert and every granted instance, all or none. When any name is not free
-- for this mode (or anyone waits on it), the block's exception undoes the
-- others and nothing is returned: the caller takes the slow path, name by
-- name. The rule is fast_acquire's (queries.sql) for each name. Names must
-- be distinct. Returns per name the instance's id and token, and the lock
-- state's incarnation.
-- statement
CREATE FUNCTION {p}fast_acquire_many(k smallint, n bytea, names bytea[], nr bigint, nw bigint,
                                     sess text, client text, m text, call bigint)
RETURNS TABLE (o_name bytea, o_id bigint, o_token bigint, o_incarnation bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r_name  bytea[];
    r_id    bigint[];
    r_token bigint[];
    inc     bigint;
    now_us  bigint := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
BEGIN
    BEGIN
        WITH li AS (
            INSERT INTO {p}lock_idents AS li (kind, ns, name, fence, n_r, n_w, n_p)
            SELECT k, n, x, now_us, nr, nw, 0 FROM unnest(names) AS x
            ON CONFLICT (kind, ns, name) DO UPDATE
               SET fence = li.fence + 1, n_r = li.n_r + excluded.n_r, n_w = li.n_w + excluded.n_w
             WHERE li.n_p = 0 AND li.n_w = 0 AND (excluded.n_w = 0 OR li.n_r = 0)
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
    SELECT i.id INTO inc FROM {p}incarnation i;
    RETURN QUERY SELECT u.a, u.b, u.c, inc FROM unnest(r_name, r_id, r_token) AS u(a, b, c);
END
$$;
-- end
