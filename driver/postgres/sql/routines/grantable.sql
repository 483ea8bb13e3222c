-- {p}grantable is the rule of internal/lockcore.Grants for one waiting
-- request of session sess in mode md: granted now unless another
-- session's granted instance (g_sess, g_mode) conflicts, or, when sess
-- holds nothing here, another session's earlier waiting request (w_sess,
-- w_mode) does. {p}regrant_grants and {p}request walk the queue
-- with it.
-- statement
CREATE OR REPLACE FUNCTION {p}grantable(sess text, md text, g_sess text[], g_mode text[], w_sess text[], w_mode text[])
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
