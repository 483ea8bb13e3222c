-- {p}regrant_grants hands identifier (k, n, m) on after a change: under
-- its row lock it grants the waiting requests the rule ({p}grantable, a
-- held transaction gate counted) allows, in queue order, counts the
-- counters again, notifies on channel, and returns the grants it made as
-- the NOTIFY payload writes them ("client:request:token:session:call",
-- comma separated; '' for none;
-- session and call because request ids start again after a crash empties
-- the lock state, sessions and calls never do): the releasing process
-- hands a client of its own its grants at once instead of waiting for the
-- notification, which still goes to every client. The granted counts come
-- from the loops over the requests it reads anyway (the same rows the
-- counting subqueries read). {p}regrant answers the number of those
-- grants.
-- statement
CREATE OR REPLACE FUNCTION {p}regrant_grants(k smallint, n bytea, m bytea, channel text) RETURNS text
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
    grants    text := '';
    entry     text;
    ok        boolean;
    n_gr      bigint := 0;
    n_gw      bigint := 0;
BEGIN
    SELECT li.fence, li.h_id, li.h_session, li.h_mode, li.gated INTO st
      FROM {p}lock_idents li WHERE li.kind = k AND li.ns = n AND li.name = m FOR UPDATE;
    IF NOT FOUND THEN
        RETURN '';
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
        n_gr := n_gr + (r.mode = 'R')::int;
        n_gw := n_gw + (r.mode = 'W')::int;
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
    FOR r IN SELECT q.id, q.session_id, q.client_id, q.mode, q.call_id FROM {p}lock_requests q
              WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'P' ORDER BY q.id LOOP
        ok := {p}grantable(r.session_id, r.mode, g_sess, g_mode, w_sess, w_mode);
        IF ok THEN
            top := top + 1;
            UPDATE {p}lock_requests
               SET status = 'G', token = top, granted_at = (extract(epoch from clock_timestamp()) * 1000000)::bigint
             WHERE id = r.id;
            g_sess := g_sess || r.session_id;
            g_mode := g_mode || r.mode;
            n_gr := n_gr + (r.mode = 'R')::int;
            n_gw := n_gw + (r.mode = 'W')::int;
            IF length(payload) > 7000 THEN
                PERFORM pg_notify(channel, payload);
                payload := '';
            END IF;
            entry := r.client_id || ':' || r.id || ':' || top || ':' || r.session_id || ':' || r.call_id;
            payload := payload || CASE WHEN payload = '' THEN '' ELSE ',' END || entry;
            grants := grants || CASE WHEN grants = '' THEN '' ELSE ',' END || entry;
        ELSE
            w_sess := w_sess || r.session_id;
            w_mode := w_mode || r.mode;
        END IF;
    END LOOP;
    UPDATE {p}lock_idents li
       SET fence = top,
           n_r = (st.h_id IS NOT NULL AND st.h_mode = 'R')::int + n_gr,
           n_w = (st.h_id IS NOT NULL AND st.h_mode = 'W')::int + n_gw,
           n_p = (SELECT count(*) FROM {p}lock_requests q WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status <> 'G')
     WHERE li.kind = k AND li.ns = n AND li.name = m;
    IF payload <> '' THEN
        PERFORM pg_notify(channel, payload);
    END IF;
    RETURN grants;
END
$$;
-- end
