-- A leaner contended path: the same decisions in fewer statements.
--
-- {p}release_name releases a session's instances of one name (all, or the
-- newest lim) and hands the lock on, as the release statement before it
-- with {p}regrant_grants did, in one pass under the identifier's row lock:
-- one read and one update of the lock row instead of two each, no read of
-- the granted requests when the counts say the release leaves none (the
-- counts are exact: the fast paths already grant on them), and the waiting
-- count from the loop over the waiting requests instead of a second scan.
-- inline_only: the session has no request rows (FastReleaseParams.
-- InlineOnly), so there are none to delete. Returns the waiting count
-- before the hand-off, the number of instances released and the grants
-- made (as {p}regrant_grants, '' for none); 0, 0, '' when the session
-- held nothing there.
-- statement
CREATE OR REPLACE FUNCTION {p}release_name(k smallint, n bytea, m bytea, sess text, lim integer, inline_only boolean, channel text,
                                OUT o_np bigint, OUT o_released bigint, OUT o_grants text)
LANGUAGE plpgsql AS $$
DECLARE
    st      record;
    r       record;
    d_r     bigint := 0;
    d_w     bigint := 0;
    inl     boolean;
    top     bigint;
    g_sess  text[] := '{}';
    g_mode  text[] := '{}';
    w_sess  text[] := '{}';
    w_mode  text[] := '{}';
    ph      text;
    payload text := '';
    entry   text;
    n_gr    bigint := 0;
    n_gw    bigint := 0;
    n_wait  bigint := 0;
BEGIN
    o_np := 0;
    o_released := 0;
    o_grants := '';
    SELECT li.fence, li.n_r, li.n_w, li.n_p, li.h_id, li.h_session, li.h_mode, li.gated INTO st
      FROM {p}lock_idents li WHERE li.kind = k AND li.ns = n AND li.name = m FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF NOT inline_only THEN
        FOR r IN DELETE FROM {p}lock_requests
                  WHERE id IN (SELECT q.id FROM {p}lock_requests q
                                WHERE q.session_id = sess AND q.kind = k AND q.ns = n AND q.name = m AND q.status = 'G'
                                ORDER BY q.id DESC LIMIT lim)
                 RETURNING mode LOOP
            d_r := d_r + (r.mode = 'R')::int;
            d_w := d_w + (r.mode = 'W')::int;
        END LOOP;
    END IF;
    -- The inline holder is the oldest instance: released last.
    inl := st.h_id IS NOT NULL AND st.h_session = sess AND (lim IS NULL OR lim > d_r + d_w);
    o_released := d_r + d_w + inl::int;
    IF o_released = 0 THEN
        RETURN;
    END IF;
    IF inl THEN
        st.h_id := NULL;
    END IF;
    o_np := st.n_p;
    IF st.n_p = 0 THEN
        UPDATE {p}lock_idents li
           SET n_r = li.n_r - d_r - (inl AND st.h_mode = 'R')::int,
               n_w = li.n_w - d_w - (inl AND st.h_mode = 'W')::int,
               h_id = st.h_id, h_session = CASE WHEN inl THEN NULL ELSE li.h_session END
         WHERE li.kind = k AND li.ns = n AND li.name = m;
        RETURN;
    END IF;
    -- The hand-off, by the rule of {p}regrant_grants (migration 025).
    top := st.fence;
    IF st.h_id IS NOT NULL THEN
        g_sess := g_sess || st.h_session;
        g_mode := g_mode || st.h_mode;
    END IF;
    IF st.n_r + st.n_w > o_released + (st.h_id IS NOT NULL)::int THEN
        FOR r IN SELECT q.session_id, q.mode FROM {p}lock_requests q
                  WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'G' LOOP
            g_sess := g_sess || r.session_id;
            g_mode := g_mode || r.mode;
            n_gr := n_gr + (r.mode = 'R')::int;
            n_gw := n_gw + (r.mode = 'W')::int;
        END LOOP;
    END IF;
    IF st.gated THEN
        -- A transaction holding the gate counts as another session's
        -- granted instance (the empty session id is nobody's).
        ph := {p}gate_held(k, n, m);
        IF ph IS NOT NULL THEN
            g_sess := g_sess || ''::text;
            g_mode := g_mode || ph;
        END IF;
    END IF;
    -- Every request not granted, front to back: the waiting ones are
    -- decided, deadlock victims being withdrawn only counted.
    FOR r IN SELECT q.id, q.session_id, q.client_id, q.mode, q.call_id, q.status FROM {p}lock_requests q
              WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status <> 'G' ORDER BY q.id LOOP
        IF r.status = 'P' AND {p}grantable(r.session_id, r.mode, g_sess, g_mode, w_sess, w_mode) THEN
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
            o_grants := o_grants || CASE WHEN o_grants = '' THEN '' ELSE ',' END || entry;
        ELSE
            n_wait := n_wait + 1;
            IF r.status = 'P' THEN
                w_sess := w_sess || r.session_id;
                w_mode := w_mode || r.mode;
            END IF;
        END IF;
    END LOOP;
    UPDATE {p}lock_idents li
       SET fence = top,
           n_r = (st.h_id IS NOT NULL AND st.h_mode = 'R')::int + n_gr,
           n_w = (st.h_id IS NOT NULL AND st.h_mode = 'W')::int + n_gw,
           n_p = n_wait,
           h_id = st.h_id, h_session = CASE WHEN inl THEN NULL ELSE li.h_session END
     WHERE li.kind = k AND li.ns = n AND li.name = m;
    IF payload <> '' THEN
        PERFORM pg_notify(channel, payload);
    END IF;
END
$$;
-- end
