-- Transaction-scoped locks (Client.LockTx, DESIGN § Locks). A transaction
-- holds an identifier's gate: the row lock of its row in {p}lock_gates,
-- shared for a read lock (LOCK IN SHARE MODE) and exclusive for a write
-- lock (FOR UPDATE), taken in the caller's own transaction, so its commit
-- or rollback releases it with nothing else to do. Once a transaction has
-- taken a gate the identifier is gated: the fast path leaves it to the
-- engine's slow path, which tests the gate under the identifier's row
-- lock (a NOWAIT locking read in a statement of its own, let go at once)
-- and counts a held gate as another session's granted instance. The
-- transaction, for its part, checks the sessions' instances under the
-- same row lock after taking the gate, so neither side can miss the other.
ALTER TABLE {p}lock_idents ADD COLUMN gated TINYINT NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS {p}lock_gates (
    kind INT            NOT NULL,
    ns   VARBINARY(256) NOT NULL,
    name VARBINARY(256) NOT NULL,
    PRIMARY KEY (kind, ns, name)
) ENGINE=InnoDB;

-- The holds of transactions, for monitoring only: a hold is live while
-- InnoDB lists its transaction (txn: connection id '@' start time) in
-- information_schema.INNODB_TRX, which needs the PROCESS privilege; rows
-- of ended transactions are removed when the next hold is recorded.
CREATE TABLE IF NOT EXISTS {p}lock_txholds (
    id      BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
    kind    INT            NOT NULL,
    ns      VARBINARY(256) NOT NULL,
    name    VARBINARY(256) NOT NULL,
    mode    CHAR(1)        NOT NULL,
    txn     VARCHAR(64)    NOT NULL,
    host    BLOB           NOT NULL,
    pid     INT            NOT NULL,
    owner   BLOB           NOT NULL,
    since   BIGINT         NOT NULL
) ENGINE=InnoDB;
