package baton

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/locks"
	mq "github.com/batonhq/baton/internal/queue"
)

// LockTx takes locks on every name in the namespace inside the caller's
// own transaction tx (a *sql.Tx or postgres.PgxTx on the client's
// database), in one mode, all or none, like PostgreSQL's
// pg_advisory_xact_lock: the transaction's commit or rollback releases
// them, and nothing else can. They conflict with every session's locks on
// the same names (and with other transactions' locks), and they are listed
// by Locks with Transaction set.
//
// timeout is Lock's: 0 tries once, a positive timeout bounds the call, a
// negative one (Forever) waits until ctx ends. On failure (ErrTimeout,
// ErrDeadlock, ErrWrongName, a context error) the call took nothing, and
// the transaction goes on as before the call — except after ErrDeadlock
// among transactions on MySQL/MariaDB, where InnoDB has rolled the whole
// transaction back.
//
// How each backend does it (docs/architecture.md): on PostgreSQL a
// transaction-level advisory lock; on MySQL/MariaDB a row lock of a gate
// row (its waits count in whole seconds of innodb_lock_wait_timeout); on
// SQLite the database's write lock, which the transaction then holds until
// it ends: every other writer waits for it, other connections cannot see
// its locks, and a session's conflicting lock fails the call with
// ErrDeadlock (ErrTimeout with timeout 0), since the session could not
// release it; no lease is renewed meanwhile, so keep the transaction
// shorter than the lease. A transaction waits for a session that holds a conflicting
// lock by polling, and a session waits for a transaction the same way
// (every 50 ms). Cycles of waits that run through a transaction are ended
// by the timeouts, not by deadlock detection (cycles among transactions
// alone by the database's own detector).
func (c *Client) LockTx(ctx context.Context, tx Execer, ns string, mode Mode, timeout time.Duration, names ...string) error {
	ids, err := lockIdents(ns, mode, names)
	if err != nil {
		return err
	}
	ids = slices.Compact(ids)           // a transaction's lock has no instances
	ct, err := inCallerTx(tx, "LockTx") // on a pool the lock would end with the call
	if err != nil {
		return err
	}
	return c.locks.LockTx(ctx, ct, ids, mode.db(), timeout)
}

// lockIdents validates Lock's arguments and returns the identifiers in
// the canonical order.
func lockIdents(ns string, mode Mode, names []string) ([]driver.Ident, error) {
	if mode != Read && mode != Write {
		return nil, fmt.Errorf("baton: unknown lock mode %d", mode)
	}
	return locks.Idents(ns, names)
}

// inCallerTx is the caller's transaction tx for the call what, which needs
// one: a pool would commit each statement on its own.
func inCallerTx(tx Execer, what string) (mq.CallerTx, error) { return mq.InCallerTx(tx, what) }
