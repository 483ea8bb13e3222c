-- Transaction-scoped locks (Client.LockTx): on SQLite a transaction's lock
-- is the database's write lock, which excludes every other writer, so no
-- identifier is ever gated here. The column keeps the lock row's shape the
-- same in every dialect.
ALTER TABLE {p}lock_idents ADD COLUMN gated INTEGER NOT NULL DEFAULT 0;
