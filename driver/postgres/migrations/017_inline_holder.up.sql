-- One row per lock while nobody else wants it. The first instance granted
-- on a free identifier is stored in the identifier's own row (the h_
-- columns, "the inline holder") instead of a request row: an uncontended
-- acquire is one upsert of that row and its release one update, both HOT
-- (no index covers the h_ columns; fillfactor leaves room on each page).
-- Every further instance, waiter and deadlock victim is a request row as
-- before. The inline holder never moves: it is an ordinary granted
-- instance (its id comes from the requests' sequence, its token is the
-- fence it was granted at, the counters count it) until its session
-- releases it or its requests are removed. Readers see both kinds through
-- {p}lock_holds.
ALTER TABLE {p}lock_idents
    ADD COLUMN h_id      bigint,
    ADD COLUMN h_session text,
    ADD COLUMN h_client  text,
    ADD COLUMN h_mode    text,
    ADD COLUMN h_call    bigint,
    ADD COLUMN h_token   bigint,
    ADD COLUMN h_at      bigint;
ALTER TABLE {p}lock_idents SET (fillfactor = 70);

CREATE VIEW {p}lock_holds AS
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests
UNION ALL
SELECT h_id, h_session, h_client, kind, ns, name, h_mode, 'G', h_call, h_token, h_at, h_at
  FROM {p}lock_idents WHERE h_id IS NOT NULL;

-- {p}grantable is the rule of internal/lockcore.Grants for one waiting
-- request of session sess in mode md: granted now unless another
-- session's granted instance (g_sess, g_mode) conflicts, or, when sess
-- holds nothing here, another session's earlier waiting request (w_sess,
-- w_mode) does. {p}regrant and {p}request (migration 018) walk the queue
-- with it.
-- statement
CREATE FUNCTION {p}grantable(sess text, md text, g_sess text[], g_mode text[], w_sess text[], w_mode text[])
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    FOR i IN 1 .. coalesce(array_length(g_sess, 1), 0) LOOP
        IF g_sess[i] <> sess AND (g_mode[i] = 'W' OR md = 'W') THEN
            RETURN false;
        END IF;
    END LOOP;
    IF sess = ANY (g_sess) THEN
        RETURN true;
    END IF;
    FOR i IN 1 .. coalesce(array_length(w_sess, 1), 0) LOOP
        IF w_sess[i] <> sess AND (w_mode[i] = 'W' OR md = 'W') THEN
            RETURN false;
        END IF;
    END LOOP;
    RETURN true;
END
$$;
-- end

-- {p}regrant as in migration 002, the inline holder counted as a granted
-- instance (it is the identifier's oldest).
-- statement
CREATE OR REPLACE FUNCTION {p}regrant(k smallint, n bytea, m bytea, channel text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    st        record;
    r         record;
    top       bigint;
    g_sess    text[] := '{}';
    g_mode    text[] := '{}';
    w_sess    text[] := '{}';
    w_mode    text[] := '{}';
    payload   text := '';
    ok        boolean;
    granted   integer := 0;
BEGIN
    SELECT li.fence, li.h_id, li.h_session, li.h_mode INTO st
      FROM {p}lock_idents li WHERE li.kind = k AND li.ns = n AND li.name = m FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    top := st.fence;
    IF st.h_id IS NOT NULL THEN
        g_sess := g_sess || st.h_session;
        g_mode := g_mode || st.h_mode;
    END IF;
    FOR r IN SELECT q.session_id, q.mode FROM {p}lock_requests q
              WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'G' LOOP
        g_sess := g_sess || r.session_id;
        g_mode := g_mode || r.mode;
    END LOOP;
    FOR r IN SELECT q.id, q.session_id, q.client_id, q.mode FROM {p}lock_requests q
              WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'P' ORDER BY q.id LOOP
        ok := {p}grantable(r.session_id, r.mode, g_sess, g_mode, w_sess, w_mode);
        IF ok THEN
            top := top + 1;
            UPDATE {p}lock_requests
               SET status = 'G', token = top, granted_at = (extract(epoch from clock_timestamp()) * 1000000)::bigint
             WHERE id = r.id;
            g_sess := g_sess || r.session_id;
            g_mode := g_mode || r.mode;
            IF length(payload) > 7000 THEN
                PERFORM pg_notify(channel, payload);
                payload := '';
            END IF;
            payload := payload || CASE WHEN payload = '' THEN '' ELSE ',' END
                               || r.client_id || ':' || r.id || ':' || top;
            granted := granted + 1;
        ELSE
            w_sess := w_sess || r.session_id;
            w_mode := w_mode || r.mode;
        END IF;
    END LOOP;
    UPDATE {p}lock_idents li
       SET fence = top,
           n_r = (st.h_id IS NOT NULL AND st.h_mode = 'R')::int
               + (SELECT count(*) FROM {p}lock_requests q WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'G' AND q.mode = 'R'),
           n_w = (st.h_id IS NOT NULL AND st.h_mode = 'W')::int
               + (SELECT count(*) FROM {p}lock_requests q WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'G' AND q.mode = 'W'),
           n_p = (SELECT count(*) FROM {p}lock_requests q WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status <> 'G')
     WHERE li.kind = k AND li.ns = n AND li.name = m;
    IF payload <> '' THEN
        PERFORM pg_notify(channel, payload);
    END IF;
    RETURN granted;
END
$$;
-- end

-- {p}fast_acquire_many as in migration 011, but when every name is free
-- each takes its inline holder (no request row; o_inline is set); when
-- not, the names shared with other readers take request rows as before,
-- all or none.
DROP FUNCTION {p}fast_acquire_many(smallint, bytea, bytea[], bigint, bigint, text, text, text, bigint);
-- statement
CREATE FUNCTION {p}fast_acquire_many(k smallint, n bytea, names bytea[], nr bigint, nw bigint,
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
         WHERE li.n_r = 0 AND li.n_w = 0 AND li.n_p = 0
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
    END IF;
    SELECT i.id INTO inc FROM {p}incarnation i;
    RETURN QUERY SELECT u.a, u.b, u.c, inc, inline FROM unnest(r_name, r_id, r_token) AS u(a, b, c);
END
$$;
-- end
