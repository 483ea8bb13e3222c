-- {p}request decides one lock request under the identifier's row lock by
-- lockcore's rule ({p}grantable), a held transaction gate ({p}gate_held)
-- counted as another session's granted instance, with two shortcuts that
-- decide the same: the lock row is read first (inserted only when
-- missing), and a write request from a session with nothing on the
-- identifier, granted or waiting, queues at once when another session's
-- request waits there. The rule would refuse it: that other request is
-- either grantable, and then a conflicting instance of another session,
-- or waiting, and then an earlier conflicting request the newcomer,
-- holding nothing, must queue behind. The full decision, and its reading
-- of every request, is left to the rest.
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
    SELECT li.fence, li.n_p, li.h_id, li.h_session, li.h_mode, li.gated INTO st
      FROM {p}lock_idents li WHERE li.kind = k AND li.ns = n AND li.name = m FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p)
        VALUES (k, n, m, now_us, 0, 0, 0) ON CONFLICT (kind, ns, name) DO NOTHING;
        SELECT li.fence, li.n_p, li.h_id, li.h_session, li.h_mode, li.gated INTO st
          FROM {p}lock_idents li WHERE li.kind = k AND li.ns = n AND li.name = m FOR UPDATE;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM {p}sessions s WHERE s.id = sess AND s.client_id = client AND s.expires_at > now_us) THEN
        RETURN QUERY SELECT 0::bigint, 'X'::text, 0::bigint;
        RETURN;
    END IF;
    IF md = 'W' AND st.n_p > 0 AND st.h_session IS DISTINCT FROM sess
       AND NOT EXISTS (SELECT 1 FROM {p}lock_requests q
                        WHERE q.session_id = sess AND q.kind = k AND q.ns = n AND q.name = m AND q.status IN ('G', 'P'))
       AND EXISTS (SELECT 1 FROM {p}lock_requests q
                    WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'P' AND q.session_id <> sess) THEN
        ok := false;
    ELSE
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
    END IF;
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
