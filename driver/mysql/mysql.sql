-- MySQL/MariaDB's own queries: the ones no other dialect has, because they
-- use what only MySQL/MariaDB offers (the engine uses a query of this file only
-- where the dialect has it, or this driver's own code does). queries.sql
-- holds the queries every dialect has, under the same names
-- (driver/queries_test.go checks both rules).

-- name: ident_waiting
SELECT n_p FROM {p}lock_idents WHERE kind = ? AND ns = ? AND name = ?;

-- name: release_delete_ns
-- MariaDB only (DELETE ... RETURNING; MySQL 8 lacks it and uses
-- release_list_ns, then request_delete). The last argument is a row limit:
-- a huge one for all, since there is no LIMIT -1.
DELETE FROM {p}lock_requests
 WHERE session_id = ? AND kind = ? AND ns = ? AND status = 'G'
 ORDER BY id DESC LIMIT ?
RETURNING kind, ns, name, mode;

-- name: release_delete_name
-- MariaDB only, like release_delete_ns.
DELETE FROM {p}lock_requests
 WHERE session_id = ? AND kind = ? AND ns = ? AND name = ? AND status = 'G'
 ORDER BY id DESC LIMIT ?
RETURNING kind, ns, name, mode;

-- name: notify_insert
INSERT INTO {p}notifications (channel, payload, created_at) VALUES (?, ?, {now});


-- ---- transaction-scoped locks (migration 020) ----
-- The gate's locking reads are built in txlocks.go (MariaDB and MySQL
-- spell a shared NOWAIT lock differently).

-- name: tx_prepare
-- Marks the identifier gated (creating its row); affected rows 0 when it
-- was already.
INSERT INTO {p}lock_idents (kind, ns, name, fence, n_r, n_w, n_p, gated)
VALUES (?, ?, ?, {now}, 0, 0, 0, 1)
ON DUPLICATE KEY UPDATE gated = 1;

-- name: tx_gate_exists
-- Not a locking read: a transaction may hold the row.
SELECT count(*) FROM {p}lock_gates WHERE kind = ? AND ns = ? AND name = ?;

-- name: tx_gate_ensure
-- Only when tx_gate_exists found nothing: on an existing row INSERT IGNORE
-- takes a shared lock, which waits for a transaction holding the gate.
INSERT IGNORE INTO {p}lock_gates (kind, ns, name) VALUES (?, ?, ?);

-- name: tx_gated
SELECT gated FROM {p}lock_idents WHERE kind = ? AND ns = ? AND name = ?;

-- name: tx_hold_insert
-- In the caller's transaction: its hold, which other connections see only
-- reading uncommitted rows while the transaction runs; once it commits the
-- row is an ordinary one, of an ended transaction (see TxHolds).
INSERT INTO {p}lock_txholds (kind, ns, name, mode, txn, host, pid, owner, since)
VALUES (?, ?, ?, ?, CONNECTION_ID(), ?, ?, ?, {now});

-- name: tx_holds_all
SELECT id, kind, ns, name, mode, 'G', CONCAT('tx ', txn), host, pid, owner, since FROM {p}lock_txholds ORDER BY id;

-- name: tx_holds_ended
-- Read committed: the holds of transactions that ended.
SELECT id FROM {p}lock_txholds ORDER BY id LIMIT 1000;

-- name: tx_holds_delete
DELETE FROM {p}lock_txholds WHERE id IN ({list});
