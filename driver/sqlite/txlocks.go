package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/maintain"
	"modernc.org/sqlite"
)

// TxGateChecks implements driver.Locks: always: the transaction holding the write lock sees the latest state.
func (d *Driver) TxGateChecks() bool { return true }

// TxGateSerial implements driver.Locks: on SQLite a transaction's gate
// is the database's write lock, which excludes every other writer (and
// every session's grant) until the transaction ends; nobody else can see
// inside it, so no identifier is gated and nothing is recorded.
func (d *Driver) TxGateSerial() bool { return true }

// sqliteBusySnapshot is SQLITE_BUSY_SNAPSHOT: the transaction read a
// snapshot older than the database; it can never write.
const sqliteBusySnapshot = 517

// TxGate implements driver.Locks: a write in the caller's transaction
// takes the write lock (see takeWriteLock); then, in the same
// transaction, which now sees the latest state, the sessions' instances
// (always: no session could release while the transaction holds it).
func (d *Driver) TxGate(ctx context.Context, tx driver.CallerTx, id driver.Ident, mode driver.LockMode, wait time.Duration, _ bool) (bool, error) {
	if err := d.takeWriteLock(ctx, tx, wait); err != nil {
		return false, err
	}
	var n int
	if err := tx.ScanRow(ctx, d.Q("tx_gate_sessions"), []any{id.Kind, []byte(id.NS), []byte(id.Name), mode}, &n); err != nil {
		return false, fmt.Errorf("tx_gate_sessions: %w", err)
	}
	if n > 0 {
		return false, driver.ErrGateSession
	}
	return true, nil
}

// TxPrepare implements driver.Locks: nothing to ready.
func (d *Driver) TxPrepare(context.Context, driver.Ident) error { return nil }

// takeWriteLock writes in the caller's transaction, again while another
// writer has the write lock, until wait has passed.
func (d *Driver) takeWriteLock(ctx context.Context, tx driver.CallerTx, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for pause := 100 * time.Microsecond; ; pause = min(2*pause, 10*time.Millisecond) {
		err := d.writeLockErr(tx.Exec(ctx, d.Q("tx_gate")))
		switch {
		case !errors.Is(err, errBusy):
			return err
		case wait >= 0 && time.Now().Add(pause).After(deadline):
			return driver.ErrGateBusy
		case !maintain.Sleep(ctx, pause):
			return ctx.Err()
		}
	}
}

// errBusy is writeLockErr's answer to a write that another writer's lock
// kept out: try again.
var errBusy = errors.New("the write lock is busy")

// writeLockErr is what a write to take the write lock says: nil when it
// took it, errBusy when another writer has it, else the error to return.
func (d *Driver) writeLockErr(err error) error {
	var se *sqlite.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && se.Code() == sqliteBusySnapshot:
		return fmt.Errorf("tx_gate: the transaction read the database before another connection wrote to it, so it cannot take the write lock; begin it with BEGIN IMMEDIATE (the _txlock=immediate connection option) or take the lock first: %w", err)
	case !d.flavor.IsRetryable(err):
		return fmt.Errorf("tx_gate: %w", err)
	}
	return errBusy
}

// TxGateHeld implements driver.Locks: never gated.
func (d *Driver) TxGateHeld(context.Context, driver.Tx, driver.Ident) (driver.LockMode, error) {
	return "", nil
}

// TxGatedAmong implements driver.Locks: never gated.
func (d *Driver) TxGatedAmong(context.Context, []driver.Ident) ([]driver.Ident, error) {
	return nil, nil
}

// TxHoldCaller implements driver.Locks: nothing is recorded.
func (d *Driver) TxHoldCaller(context.Context, driver.CallerTx, driver.TxHold) error { return nil }

// TxHolds implements driver.Locks: nothing is recorded.
func (d *Driver) TxHolds(context.Context) ([]driver.LockInfo, error) { return nil, nil }
