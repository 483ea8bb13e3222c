-- {p}capture is the trigger function on every subscribed table: for each
-- subscription of the table and the change's action it enqueues one event
-- message ('ev:' || name) in the writing transaction, wakes the consumers
-- (NOTIFY, and the notifications table while a consumer behind a
-- transaction pooler reads it), and names the table as the subscription
-- did (subscribed_as; schema.table when '').
--
-- Canonical event rows (docs/events.md): each row is written in the
-- table's column order (row_to_json, not to_jsonb, whose keys are sorted),
-- with the session settings that shape values fixed (timestamps in UTC,
-- shortest floats, hex bytea), and the bytea and timestamp columns' kinds
-- named ([name, value, kind] entries) so that baton writes them as base64
-- and RFC 3339. The rows are built once per change, and only when a
-- subscription matches. Generic plans: the catalog query would otherwise
-- be planned again for every row. The function's search_path is fixed, so
-- it finds baton's tables whatever the writing session's search_path is.
-- statement
CREATE OR REPLACE FUNCTION {p}capture() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT SET TimeZone = 'UTC' SET extra_float_digits = 1
SET bytea_output = 'hex' SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    act     text := left(TG_OP, 1);
    tbl     text := TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME;
    kinds   jsonb;
    newrow  json;
    oldrow  json;
    pk      json;
    msgkey  text;
    nowus   bigint := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
    s       record;
BEGIN
    FOR s IN SELECT name, max_attempts, coalesce(nullif(subscribed_as, ''), tbl) AS subscribed_as FROM {p}subscriptions
              WHERE table_name = tbl AND position(act IN actions) > 0 LOOP
        IF msgkey IS NULL THEN
            SELECT jsonb_object_agg(a.attname, CASE a.base WHEN 'bytea'::regtype THEN 'b' ELSE 't' END) INTO kinds
              FROM (SELECT attname, CASE WHEN atttypid < 16384 THEN atttypid
                                         ELSE (SELECT nullif(typbasetype, 0) FROM pg_type WHERE oid = atttypid) END AS base
                      FROM pg_attribute WHERE attrelid = TG_RELID AND attnum > 0 AND NOT attisdropped) AS a
             WHERE a.base IN ('bytea'::regtype, 'timestamp'::regtype, 'timestamptz'::regtype);
            IF TG_OP <> 'DELETE' THEN newrow := row_to_json(NEW); END IF;
            IF TG_OP <> 'INSERT' THEN oldrow := row_to_json(OLD); END IF;
            SELECT json_object_agg(k, coalesce(newrow, oldrow) -> k ORDER BY n), jsonb_object_agg(k, coalesce(newrow, oldrow) -> k)::text
              INTO pk, msgkey FROM unnest(TG_ARGV) WITH ORDINALITY AS u(k, n);
            IF kinds IS NOT NULL THEN
                IF newrow IS NOT NULL THEN
                    SELECT json_agg(CASE WHEN kinds ? e.key THEN json_build_array(e.key, e.value, kinds ->> e.key)
                                         ELSE json_build_array(e.key, e.value) END ORDER BY e.n)
                      INTO newrow FROM json_each(newrow) WITH ORDINALITY AS e(key, value, n);
                END IF;
                IF oldrow IS NOT NULL THEN
                    SELECT json_agg(CASE WHEN kinds ? e.key THEN json_build_array(e.key, e.value, kinds ->> e.key)
                                         ELSE json_build_array(e.key, e.value) END ORDER BY e.n)
                      INTO oldrow FROM json_each(oldrow) WITH ORDINALITY AS e(key, value, n);
                END IF;
                SELECT json_agg(c ORDER BY array_position(TG_ARGV, c ->> 0)) INTO pk
                  FROM json_array_elements(coalesce(newrow, oldrow)) AS c WHERE c ->> 0 = ANY (TG_ARGV);
            END IF;
        END IF;
        INSERT INTO {p}messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at)
        VALUES ('ev:' || s.name,
                convert_to(json_build_object('subscription', s.name, 'table', s.subscribed_as,
                    'action', CASE act WHEN 'I' THEN 'insert' WHEN 'U' THEN 'update' ELSE 'delete' END,
                    'pk', pk, 'new', newrow, 'old', oldrow)::text, 'UTF8'),
                0, msgkey, nowus, nowus, 0, s.max_attempts, 'R', '', nowus);
        PERFORM pg_notify('{p}notify', '#q#ev:' || s.name || ' ');
        -- Consumers behind a transaction pooler without listen_dsn read
        -- notifications from the table (migration 009).
        IF EXISTS (SELECT 1 FROM {p}notify_pollers WHERE expires_at > nowus) THEN
            INSERT INTO {p}notifications (channel, payload, created_at) VALUES ('#q#ev:' || s.name, '', nowus);
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;
-- end
