-- {p}regrant grants, under the lock row, every waiting request on one
-- identifier that can be granted now, and notifies the clients it granted
-- with "client:request:token" entries.
-- It is the rule of internal/lockcore.Grants, in one statement so that a
-- hand-off costs one round trip instead of a transaction of several; the
-- conformance suite holds both to the same behaviour:
--   * a request conflicts with other sessions' granted instances;
--   * a session that holds nothing on the identifier also queues behind
--     earlier conflicting requests of other sessions;
--   * a session that holds an instance skips the queue;
--   * deadlock victims ('D') are ignored.
-- statement
CREATE FUNCTION {p}regrant(k smallint, n bytea, m bytea, channel text) RETURNS integer
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
    holds     boolean;
    ok        boolean;
    i         integer;
    granted   integer := 0;
BEGIN
    SELECT li.fence INTO st FROM {p}lock_idents li WHERE li.kind = k AND li.ns = n AND li.name = m FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    top := st.fence;
    FOR r IN SELECT q.session_id, q.mode FROM {p}lock_requests q
              WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'G' LOOP
        g_sess := g_sess || r.session_id;
        g_mode := g_mode || r.mode;
    END LOOP;
    FOR r IN SELECT q.id, q.session_id, q.client_id, q.mode FROM {p}lock_requests q
              WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'P' ORDER BY q.id LOOP
        holds := r.session_id = ANY (g_sess);
        ok := true;
        FOR i IN 1 .. coalesce(array_length(g_sess, 1), 0) LOOP
            IF g_sess[i] <> r.session_id AND (g_mode[i] = 'W' OR r.mode = 'W') THEN
                ok := false;
                EXIT;
            END IF;
        END LOOP;
        IF ok AND NOT holds THEN
            FOR i IN 1 .. coalesce(array_length(w_sess, 1), 0) LOOP
                IF w_sess[i] <> r.session_id AND (w_mode[i] = 'W' OR r.mode = 'W') THEN
                    ok := false;
                    EXIT;
                END IF;
            END LOOP;
        END IF;
        IF ok THEN
            top := top + 1;
            UPDATE {p}lock_requests
               SET status = 'G', token = top, granted_at = (extract(epoch from clock_timestamp()) * 1000000)::bigint
             WHERE id = r.id;
            g_sess := g_sess || r.session_id;
            g_mode := g_mode || r.mode;
            -- The payload names the grant, so the waiter needs no query.
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
           n_r = (SELECT count(*) FROM {p}lock_requests q WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'G' AND q.mode = 'R'),
           n_w = (SELECT count(*) FROM {p}lock_requests q WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status = 'G' AND q.mode = 'W'),
           n_p = (SELECT count(*) FROM {p}lock_requests q WHERE q.kind = k AND q.ns = n AND q.name = m AND q.status <> 'G')
     WHERE li.kind = k AND li.ns = n AND li.name = m;
    IF payload <> '' THEN
        PERFORM pg_notify(channel, payload);
    END IF;
    RETURN granted;
END
$$;
-- end
