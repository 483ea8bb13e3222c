-- Transaction-scoped locks (Client.LockTx, DESIGN § Locks). A transaction
-- holds an identifier's gate: a transaction-level advisory lock on
-- {p}gate_key, shared for a read lock and exclusive for a write lock,
-- taken in the caller's own transaction by {p}tx_gate, so its commit or
-- rollback releases it with nothing else to do, and pg_locks lists it.
-- An identifier a transaction locks is gated (by a statement of its own,
-- committed before the transaction's check reads it): the one-statement fast
-- paths leave a gated identifier to {p}request and {p}regrant, which ask
-- {p}gate_held under the identifier's row lock and count a held gate as
-- another session's granted instance. {p}gate_held's probe is itself a
-- transaction-level lock, held until the grant commits; {p}tx_gate checks
-- the sessions' instances once it holds the gate, with a snapshot taken
-- after: whichever comes second sees the other.
ALTER TABLE {p}lock_idents ADD COLUMN gated boolean NOT NULL DEFAULT false;

-- statement
CREATE FUNCTION {p}gate_key(k smallint, n bytea, m bytea) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT hashtextextended(k::text || ':' || encode(n, 'hex') || ':' || encode(m, 'hex'), 7809847782465536322)
$$;
-- end

-- {p}gate_held is the mode a transaction holds the gate in ('W', 'R'), or
-- NULL when none does. Its probe stays held until the caller's
-- transaction ends (see above).
-- statement
CREATE FUNCTION {p}gate_held(k smallint, n bytea, m bytea) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    key bigint := {p}gate_key(k, n, m);
BEGIN
    IF NOT pg_try_advisory_xact_lock_shared(key) THEN
        RETURN 'W';
    END IF;
    IF NOT pg_try_advisory_xact_lock(key) THEN
        RETURN 'R';
    END IF;
    RETURN NULL;
END
$$;
-- end

-- {p}tx_gate takes the gate in the caller's transaction, waiting at most
-- wait_ms (0: not at all, negative: without limit), and then, when asked
-- (check_sessions) and in READ COMMITTED (each statement a new snapshot),
-- checks that the identifier
-- is gated and that no session holds it, or waits for it, in a
-- conflicting mode: a fast path that granted before the mark was
-- committed first, and is seen. It says 'ok', 'unchecked' (gate taken,
-- not checked: not asked, or another isolation level), 'ungated' (not marked yet: the
-- client marks it and calls again), 'session' (a session's lock
-- conflicts), 'busy' (not free in time) or 'deadlock' (PostgreSQL found a
-- cycle among transactions); on every failure the block's subtransaction
-- gave the gate back, and no answer aborts the caller's transaction.
-- statement
CREATE FUNCTION {p}tx_gate(k smallint, n bytea, m bytea, md text, wait_ms integer, check_sessions boolean) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    key     bigint := {p}gate_key(k, n, m);
    old     text := current_setting('lock_timeout');
    checked boolean := check_sessions AND current_setting('transaction_isolation') = 'read committed';
BEGIN
    BEGIN
        IF wait_ms = 0 THEN
            IF NOT ((md = 'W' AND pg_try_advisory_xact_lock(key)) OR (md = 'R' AND pg_try_advisory_xact_lock_shared(key))) THEN
                RETURN 'busy';
            END IF;
        ELSE
            PERFORM set_config('lock_timeout', CASE WHEN wait_ms < 0 THEN '0' ELSE wait_ms::text END, true);
            IF md = 'W' THEN
                PERFORM pg_advisory_xact_lock(key);
            ELSE
                PERFORM pg_advisory_xact_lock_shared(key);
            END IF;
            PERFORM set_config('lock_timeout', old, true);
        END IF;
        IF checked AND NOT coalesce((SELECT li.gated FROM {p}lock_idents li
                                      WHERE li.kind = k AND li.ns = n AND li.name = m), false) THEN
            RAISE EXCEPTION USING ERRCODE = 'BT002', MESSAGE = 'baton: the identifier is not gated';
        END IF;
        IF checked AND EXISTS (SELECT 1 FROM {p}lock_holds h
                                WHERE h.kind = k AND h.ns = n AND h.name = m AND h.status IN ('G', 'P')
                                  AND (h.mode = 'W' OR md = 'W')) THEN
            RAISE EXCEPTION USING ERRCODE = 'BT001', MESSAGE = 'baton: a session holds the lock';
        END IF;
    EXCEPTION
        WHEN lock_not_available THEN
            RETURN 'busy';
        WHEN deadlock_detected THEN
            RETURN 'deadlock';
        WHEN SQLSTATE 'BT001' THEN
            RETURN 'session';
        WHEN SQLSTATE 'BT002' THEN
            RETURN 'ungated';
    END;
    RETURN CASE WHEN checked THEN 'ok' ELSE 'unchecked' END;
END
$$;
-- end

-- {p}request and {p}regrant as in migrations 018 and 017, a held gate
-- counted as another session's granted instance.
-- statement
CREATE OR REPLACE FUNCTION {p}request(k smallint, n bytea, m bytea, sess text, client text, md text, call bigint, try_once boolean)
RETURNS TABLE (o_id bigint, o_status text, o_token bigint)
LANGUAGE plpgsql AS $$
DECLARE
    ph      text;
    st      record;
    r       record;
    g_sess  text[] := '{}';
    g_mode  text[] := '{}';
    w_sess  text[] := '{}';
    w_mode  text[] := '{}';
    ok      boolean;
    now_us  bigint := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
    new_id  bigint;
BEGIN
    INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p)
    VALUES (k, n, m, now_us, 0, 0, 0) ON CONFLICT (kind, ns, name) DO NOTHING;
    SELECT li.fence, li.h_id, li.h_session, li.h_mode, li.gated INTO st
      FROM {p}lock_idents li WHERE li.kind = k AND li.ns = n AND li.name = m FOR UPDATE;
    IF NOT EXISTS (SELECT 1 FROM {p}sessions s WHERE s.id = sess AND s.client_id = client AND s.expires_at > now_us) THEN
        RETURN QUERY SELECT 0::bigint, 'X'::text, 0::bigint;
        RETURN;
    END IF;
    IF st.h_id IS NOT NULL THEN
        g_sess := g_sess || st.h_session;
        g_mode := g_mode || st.h_mode;
    END IF;
    FOR r IN SELECT q.session_id, q.mode FROM {p}lock_requests q
              WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'G' LOOP
        g_sess := g_sess || r.session_id;
        g_mode := g_mode || r.mode;
    END LOOP;
    IF st.gated THEN
        -- A transaction holding the gate counts as another session's
        -- granted instance (the empty session id is nobody's).
        ph := {p}gate_held(k, n, m);
        IF ph IS NOT NULL THEN
            g_sess := g_sess || ''::text;
            g_mode := g_mode || ph;
        END IF;
    END IF;
    -- The waiting requests, front to back, as lockcore.Grants simulates
    -- them, then the new one at the back.
    FOR r IN SELECT q.id, q.session_id, q.mode FROM {p}lock_requests q
              WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'P'
             UNION ALL SELECT 9223372036854775807, sess, md
             ORDER BY 1 LOOP
        ok := {p}grantable(r.session_id, r.mode, g_sess, g_mode, w_sess, w_mode);
        IF ok THEN
            g_sess := g_sess || r.session_id;
            g_mode := g_mode || r.mode;
        ELSE
            w_sess := w_sess || r.session_id;
            w_mode := w_mode || r.mode;
        END IF;
    END LOOP;
    -- ok is the new request's decision (the loop's last row).
    IF NOT ok AND try_once THEN
        RETURN QUERY SELECT 0::bigint, 'W'::text, 0::bigint;
        RETURN;
    END IF;
    INSERT INTO {p}lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at)
    VALUES (sess, client, k, n, m, md, CASE WHEN ok THEN 'G' ELSE 'P' END, call,
            CASE WHEN ok THEN st.fence + 1 ELSE 0 END, now_us, CASE WHEN ok THEN now_us END)
    RETURNING id INTO new_id;
    UPDATE {p}lock_idents li
       SET fence = li.fence + ok::int,
           n_r = li.n_r + (ok AND md = 'R')::int,
           n_w = li.n_w + (ok AND md = 'W')::int,
           n_p = li.n_p + (NOT ok)::int
     WHERE li.kind = k AND li.ns = n AND li.name = m;
    RETURN QUERY SELECT new_id, CASE WHEN ok THEN 'G' ELSE 'P' END, CASE WHEN ok THEN st.fence + 1 ELSE 0::bigint END;
END
$$;
-- end

-- statement
CREATE OR REPLACE FUNCTION {p}regrant(k smallint, n bytea, m bytea, channel text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    ph      text;
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
    SELECT li.fence, li.h_id, li.h_session, li.h_mode, li.gated INTO st
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
    IF st.gated THEN
        -- A transaction holding the gate counts as another session's
        -- granted instance (the empty session id is nobody's).
        ph := {p}gate_held(k, n, m);
        IF ph IS NOT NULL THEN
            g_sess := g_sess || ''::text;
            g_mode := g_mode || ph;
        END IF;
    END IF;
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

-- {p}fast_acquire_many as in migration 017, never on a gated identifier.
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
