-- {p}withdraw_call is {p}remove_requests for the requests of one lock
-- call (sess, call) on names (sorted) of kind k and namespace n, which it
-- finds itself under the rows' locks: the undo of a call whose
-- statements have all ended had read them first, a round trip and a
-- read of {p}lock_holds more. A call that stored nothing locks nothing,
-- and an identifier where the call had nothing is not handed on.
-- statement
CREATE OR REPLACE FUNCTION {p}withdraw_call(sess text, call bigint, k smallint, n bytea, names bytea[], channel text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    nm     bytea;
    gone   boolean;
    g      text;
    grants text := '';
BEGIN
    -- No statement of the call runs any more: a call that stored nothing
    -- (a try refused at once) locks nothing.
    IF NOT EXISTS (SELECT 1 FROM {p}lock_requests q
                    WHERE q.session_id = sess AND q.kind = k AND q.ns = n AND q.name = ANY (names) AND q.call_id = call)
       AND NOT EXISTS (SELECT 1 FROM {p}lock_idents li
                        WHERE li.kind = k AND li.ns = n AND li.name = ANY (names) AND li.h_id IS NOT NULL
                          AND li.h_session = sess AND li.h_call = call) THEN
        RETURN '';
    END IF;
    FOREACH nm IN ARRAY names LOOP
        PERFORM 1 FROM {p}lock_idents li WHERE li.kind = k AND li.ns = n AND li.name = nm FOR UPDATE;
    END LOOP;
    FOREACH nm IN ARRAY names LOOP
        DELETE FROM {p}lock_requests q
         WHERE q.kind = k AND q.ns = n AND q.name = nm AND q.session_id = sess AND q.call_id = call;
        gone := FOUND;
        UPDATE {p}lock_idents li
           SET h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_token = NULL, h_at = NULL
         WHERE li.kind = k AND li.ns = n AND li.name = nm AND li.h_id IS NOT NULL AND li.h_session = sess AND li.h_call = call;
        IF gone OR FOUND THEN
            g := {p}regrant_grants(k, n, nm, channel);
            IF g <> '' THEN
                grants := grants || CASE WHEN grants = '' THEN '' ELSE ',' END || g;
            END IF;
        END IF;
    END LOOP;
    RETURN grants;
END
$$;
-- end
