-- One row per lock while nobody else wants it, as PostgreSQL's migration
-- 017: the first instance granted on a free identifier is stored in the
-- identifier's own row (the h_ columns, "the inline holder") instead of a
-- request row, so that an uncontended acquire and its release write one
-- page each (a request row with its two indexes and the lock row were four
-- WAL frames per commit). The counters count the inline holder like any
-- granted instance. Its id is random and negative (chosen by the client),
-- never one of the request rows' rowids, and sorts before them: the inline
-- holder is its identifier's oldest instance. Whatever changes an
-- identifier's requests in a transaction first moves its inline holder
-- into a request row under the same id (the driver's Adopt hook), so the
-- slow path sees only request rows; readers see both through
-- {p}lock_holds.
ALTER TABLE {p}lock_idents ADD COLUMN h_id INTEGER;
ALTER TABLE {p}lock_idents ADD COLUMN h_session TEXT;
ALTER TABLE {p}lock_idents ADD COLUMN h_client TEXT;
ALTER TABLE {p}lock_idents ADD COLUMN h_mode TEXT;
ALTER TABLE {p}lock_idents ADD COLUMN h_call INTEGER;
ALTER TABLE {p}lock_idents ADD COLUMN h_token INTEGER;
ALTER TABLE {p}lock_idents ADD COLUMN h_at INTEGER;

CREATE VIEW {p}lock_holds AS
SELECT id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at
  FROM {p}lock_requests
UNION ALL
SELECT h_id, h_session, h_client, kind, ns, name, h_mode, 'G', h_call, h_token, h_at, h_at
  FROM {p}lock_idents WHERE h_id IS NOT NULL;
