-- A withdrawal in one statement. The engine deletes
-- requests that nobody will wait for (an undone call's, an ended
-- session's, an orphan's) and grants what that frees; that was its
-- transaction of about eight statements (the identifiers' rows locked,
-- the requests deleted, the requests read again and the waiters granted,
-- the counters written, the commit). {p}remove_requests does it in one
-- call: the identifiers' rows locked in the order every call locks them
-- (k, n, m: the distinct identifiers, sorted), the requests deleted
-- (request rows and inline holders, as request_delete deletes them, the
-- inline holders by their identifiers' keys), and each identifier handed
-- on by {p}regrant_grants, which counts its counters
-- again from the rows, sees a transaction's gate, and notifies the
-- grants. Returns the grants ({p}regrant_grants' form, comma separated;
-- '' for none).
-- statement
CREATE OR REPLACE FUNCTION {p}remove_requests(ids bigint[], k smallint[], n bytea[], m bytea[], channel text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    i      integer;
    g      text;
    grants text := '';
BEGIN
    FOR i IN 1 .. coalesce(cardinality(k), 0) LOOP
        PERFORM 1 FROM {p}lock_idents li WHERE li.kind = k[i] AND li.ns = n[i] AND li.name = m[i] FOR UPDATE;
    END LOOP;
    -- Only rows of the identifiers whose row locks the call holds.
    DELETE FROM {p}lock_requests q
     USING unnest(k, n, m) AS x(kind, ns, name)
     WHERE q.id = ANY (ids) AND q.kind = x.kind AND q.ns = x.ns AND q.name = x.name;
    FOR i IN 1 .. coalesce(cardinality(k), 0) LOOP
        UPDATE {p}lock_idents li
           SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_token = NULL, h_at = NULL
         WHERE li.kind = k[i] AND li.ns = n[i] AND li.name = m[i] AND li.h_id = ANY (ids);
    END LOOP;
    FOR i IN 1 .. coalesce(cardinality(k), 0) LOOP
        g := {p}regrant_grants(k[i], n[i], m[i], channel);
        IF g <> '' THEN
            grants := grants || CASE WHEN grants = '' THEN '' ELSE ',' END || g;
        END IF;
    END LOOP;
    RETURN grants;
END
$$;
-- end
