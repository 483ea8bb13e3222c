-- The undo of a lock call that may still run, in one call. A call whose client was cut off may have a statement still
-- running in the server (or in a pooler's connection to it); its undo
-- locked the identifiers' rows first, in the order every call locks
-- them, so that such a statement (which holds or waits for one of them)
-- ends first, then read the call's requests and withdrew them: the
-- engine's transaction of about eight statements. {p}settle_call does it
-- in one: each row made when missing (as ident_ensure does, so that a
-- statement about to make it is waited for too) and locked, then
-- {p}withdraw_call, which finds the call's requests
-- under those locks and hands each identifier on. Same arguments and
-- answer as {p}withdraw_call.
-- statement
CREATE OR REPLACE FUNCTION {p}settle_call(sess text, call bigint, k smallint, n bytea, names bytea[], channel text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    nm bytea;
BEGIN
    FOREACH nm IN ARRAY names LOOP
        INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p)
        VALUES (k, n, nm, (extract(epoch from clock_timestamp()) * 1000000)::bigint, 0, 0, 0)
            ON CONFLICT (kind, ns, name) DO NOTHING;
        PERFORM 1 FROM {p}lock_idents li WHERE li.kind = k AND li.ns = n AND li.name = nm FOR UPDATE;
    END LOOP;
    RETURN {p}withdraw_call(sess, call, k, n, names, channel);
END
$$;
-- end
