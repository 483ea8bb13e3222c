-- Table-change subscriptions: see the SQLite migration of the same name.
-- On PostgreSQL one trigger function serves every subscribed table; the
-- trigger passes the primary key columns as arguments. The function's
-- search_path is fixed, so it finds baton's tables whatever the writing
-- session's search_path is.
CREATE TABLE {p}subscriptions (
    name         text    NOT NULL PRIMARY KEY,
    table_name   text    NOT NULL,
    actions      text    NOT NULL,
    max_attempts integer NOT NULL,
    created_at   bigint  NOT NULL
);
CREATE INDEX {p}subscriptions_table ON {p}subscriptions (table_name);
-- statement
CREATE FUNCTION {p}capture() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    act    text := left(TG_OP, 1);
    tbl    text := TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME;
    newrow jsonb;
    oldrow jsonb;
    pk     jsonb;
    nowus  bigint := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
    s      record;
BEGIN
    IF TG_OP <> 'DELETE' THEN newrow := to_jsonb(NEW); END IF;
    IF TG_OP <> 'INSERT' THEN oldrow := to_jsonb(OLD); END IF;
    SELECT jsonb_object_agg(k, coalesce(newrow, oldrow) -> k) INTO pk FROM unnest(TG_ARGV) AS k;
    FOR s IN SELECT name, max_attempts FROM {p}subscriptions
              WHERE table_name = tbl AND position(act IN actions) > 0 LOOP
        INSERT INTO {p}messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at)
        VALUES ('ev:' || s.name,
                convert_to(jsonb_build_object('subscription', s.name, 'table', tbl,
                    'action', CASE act WHEN 'I' THEN 'insert' WHEN 'U' THEN 'update' ELSE 'delete' END,
                    'pk', pk, 'new', newrow, 'old', oldrow)::text, 'UTF8'),
                0, pk::text, nowus, nowus, 0, s.max_attempts, 'R', '', nowus);
        -- Consumers wake at commit; PostgreSQL sends one per distinct payload.
        PERFORM pg_notify('{p}notify', '#q#ev:' || s.name || ' ');
    END LOOP;
    RETURN NULL;
END
$$;
-- end
