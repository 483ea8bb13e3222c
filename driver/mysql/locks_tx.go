package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// errLockNowait is MySQL 8's answer to a NOWAIT locking read that would
// wait (MariaDB answers errLockWaitTimeout).
const errLockNowait = 3572

// maxLockWait is innodb_lock_wait_timeout's largest value, in seconds.
const maxLockWait = 1073741824

// TxGateChecks implements driver.Locks: never: a read in the caller's
// transaction may see an old snapshot. The engine readies the identifier
// (TxPrepare) before every gate: a locking read of a missing gate row
// would take a gap lock that the row's insertion then waits for.
func (d *Driver) TxGateChecks() bool { return false }

// TxGateSerial implements driver.Locks: the gates are row locks of
// {p}lock_gates; other writers go on.
func (d *Driver) TxGateSerial() bool { return false }

// gateQuery is the locking read of an identifier's gate row.
func (d *Driver) gateQuery(mode driver.LockMode, nowait bool) string {
	lock := " FOR UPDATE"
	if mode == driver.ModeRead {
		lock = " FOR SHARE"
		if d.mariadb {
			lock = " LOCK IN SHARE MODE"
		}
	}
	if nowait {
		lock += " NOWAIT"
	}
	return "SELECT 1 FROM " + d.prefix + "lock_gates WHERE kind = ? AND ns = ? AND name = ?" + lock
}

// TxPrepare implements driver.Locks: the identifier's row gated, then
// the gate row (created before any transaction locks it), once per
// identifier and driver: both stay.
func (d *Driver) TxPrepare(ctx context.Context, id driver.Ident) error {
	if err := d.cleanEnded(ctx); err != nil {
		return err
	}
	if _, known := d.gates.Load(id); known {
		return nil // a gate row is made after its identifier is gated, and both stay
	}
	if err := d.prepareGate(ctx, id); err != nil {
		return err
	}
	d.gates.Store(id, true)
	return nil
}

// cleanEnded deletes the holds of ended transactions (deleteEnded) at
// most once a second, by the first call after the second has passed.
func (d *Driver) cleanEnded(ctx context.Context) error {
	last := d.txCleaned.Load()
	if time.Since(time.Unix(0, last)) > time.Second && d.txCleaned.CompareAndSwap(last, time.Now().UnixNano()) {
		return d.deleteEnded(ctx)
	}
	return nil
}

func (d *Driver) prepareGate(ctx context.Context, id driver.Ident) error {
	args := []any{id.Kind, []byte(id.NS), []byte(id.Name)}
	if _, err := d.SQL.ExecContext(ctx, d.Q("tx_prepare"), args...); err != nil {
		return fmt.Errorf("tx_prepare: %w", err)
	}
	// A gated identifier is the slow path's (its fast holder, if any, is
	// adopted under the row lock by the first slow-path statement): no
	// fast statement grants it from now on.
	if _, err := d.SQL.ExecContext(ctx, d.Q("fast_engage"), append(args, 0)...); err != nil {
		return fmt.Errorf("fast_engage: %w", err)
	}
	// Even when the identifier was gated already: by another call that
	// may not have made the gate row yet.
	var n int
	if err := d.SQL.QueryRowContext(ctx, d.Q("tx_gate_exists"), args...).Scan(&n); err != nil {
		return fmt.Errorf("tx_gate_exists: %w", err)
	}
	if n == 0 {
		if _, err := d.SQL.ExecContext(ctx, d.Q("tx_gate_ensure"), args...); err != nil {
			return fmt.Errorf("tx_gate_ensure: %w", err)
		}
	}
	return nil
}

// TxGate implements driver.Locks: the gate row locked by the caller's
// transaction, waiting under innodb_lock_wait_timeout (whole seconds) and
// restoring it. The engine checks the sessions (a read in the caller's
// transaction could see an old snapshot).
func (d *Driver) TxGate(ctx context.Context, tx driver.CallerTx, id driver.Ident, mode driver.LockMode, wait time.Duration, _ bool) (bool, error) {
	args := []any{id.Kind, []byte(id.NS), []byte(id.Name)}
	var one int
	if wait == 0 {
		return false, gateErr(tx.ScanRow(ctx, d.gateQuery(mode, true), args, &one))
	}
	return false, withLockWait(ctx, tx, lockWaitSeconds(wait), func() error {
		return gateErr(tx.ScanRow(ctx, d.gateQuery(mode, false), args, &one))
	})
}

// lockWaitSeconds is innodb_lock_wait_timeout for a wait (negative: as
// long as it takes): whole seconds, at least one.
func lockWaitSeconds(wait time.Duration) int64 {
	if wait < 0 {
		return maxLockWait
	}
	return min(max(int64(math.Ceil(wait.Seconds())), 1), maxLockWait)
}

// withLockWait runs fn in the caller's transaction with the session's
// innodb_lock_wait_timeout set to secs, and restores it (even when ctx
// ends meanwhile).
func withLockWait(ctx context.Context, tx driver.CallerTx, secs int64, fn func() error) error {
	var old int64
	if err := tx.ScanRow(ctx, "SELECT @@SESSION.innodb_lock_wait_timeout", nil, &old); err != nil {
		return fmt.Errorf("tx_gate: %w", err)
	}
	if err := setLockWait(ctx, tx, secs); err != nil {
		return err
	}
	err := fn()
	if rerr := setLockWait(context.WithoutCancel(ctx), tx, old); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// setLockWait sets the session's innodb_lock_wait_timeout.
func setLockWait(ctx context.Context, tx driver.CallerTx, secs int64) error {
	if err := tx.Exec(ctx, fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d", secs)); err != nil {
		return fmt.Errorf("tx_gate: %w", err)
	}
	return nil
}

// gateErr maps a locking read's failure to TxGate's. No row: the gate
// row is made by TxPrepare, after the identifier is gated.
func gateErr(err error) error {
	var me *gomysql.MySQLError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return driver.ErrGateUngated
	case errors.As(err, &me) && gateErrs[me.Number] != nil:
		return gateErrs[me.Number]
	}
	return fmt.Errorf("tx_gate: %w", err)
}

// gateErrs are TxGate's errors for the server's errors of a locking read.
var gateErrs = map[uint16]error{
	errLockWaitTimeout: driver.ErrGateBusy,
	errLockNowait:      driver.ErrGateBusy,
	errLockDeadlock:    driver.ErrGateDeadlock,
}

// TxGateHeld implements driver.Locks: NOWAIT locking reads of the gate
// row in tx, exclusive first, whose lock stays until tx ends (a
// transaction that takes the gate after sees the grant tx makes).
func (d *Driver) TxGateHeld(ctx context.Context, tx driver.Tx, id driver.Ident) (driver.LockMode, error) {
	t := tx.(*sqlbase.Tx).Tx
	args := []any{id.Kind, []byte(id.NS), []byte(id.Name)}
	switch busy, err := d.gateBusy(ctx, t, driver.ModeWrite, args); {
	case err != nil:
		return "", err
	case !busy:
		return "", nil
	}
	switch busy, err := d.gateBusy(ctx, t, driver.ModeRead, args); {
	case err != nil:
		return "", err
	case busy:
		return driver.ModeWrite, nil
	}
	return driver.ModeRead, nil
}

// gateBusy reports whether another transaction holds the gate row of
// args (kind, namespace, name) in a mode that conflicts with mode: a
// NOWAIT locking read in t, whose lock stays.
func (d *Driver) gateBusy(ctx context.Context, t *sql.Tx, mode driver.LockMode, args []any) (bool, error) {
	var one int
	err := gateErr(t.QueryRowContext(ctx, d.gateQuery(mode, true), args...).Scan(&one))
	switch {
	case errors.Is(err, driver.ErrGateBusy):
		return true, nil
	case errors.Is(err, driver.ErrGateUngated): // no gate row: nobody holds it
		return false, nil
	}
	return false, err
}

// LockRequestStatusesGated implements driver.Locks.
func (d *Driver) LockRequestStatusesGated(ctx context.Context, ids []int64) (map[int64]driver.Request, []driver.Ident, error) {
	return sqlbase.StatusesGated(ctx, d.DB, ids)
}

// TxGatedAmong implements driver.Locks.
func (d *Driver) TxGatedAmong(ctx context.Context, ids []driver.Ident) ([]driver.Ident, error) {
	return sqlbase.GatedAmong(ctx, d.DB, ids)
}

// TxHoldCaller implements driver.Locks: the hold is a row the
// caller's transaction inserts, seen by TxHolds while the transaction
// runs, and removed by the rollback or, once committed, by TxHolds or a
// later TxPrepare (at most once a second).
func (d *Driver) TxHoldCaller(ctx context.Context, tx driver.CallerTx, h driver.TxHold) error {
	if err := tx.Exec(ctx, d.Q("tx_hold_insert"), h.Kind, []byte(h.NS), []byte(h.Name), h.Mode, h.Host, h.PID, h.Owner); err != nil {
		return fmt.Errorf("tx_hold_insert: %w", err)
	}
	return nil
}

// deleteEnded deletes the holds of ended transactions: the committed rows
// (those rolled back are gone already).
func (d *Driver) deleteEnded(ctx context.Context) error {
	ended, err := d.endedHolds(ctx)
	if err != nil || len(ended) == 0 {
		return err
	}
	ids := make([]any, 0, len(ended))
	for id := range ended {
		ids = append(ids, id)
	}
	q := sqlbase.ExpandList(d.Q("tx_holds_delete"), false, 1, len(ids))
	if _, err := d.SQL.ExecContext(ctx, q, ids...); err != nil {
		return fmt.Errorf("tx_holds_delete: %w", err)
	}
	return nil
}

// endedHolds reads the committed hold rows.
func (d *Driver) endedHolds(ctx context.Context) (map[int64]bool, error) {
	rows, done, err := d.readAt(ctx, sql.LevelReadCommitted, "tx_holds_ended")
	if err != nil {
		return nil, err
	}
	defer done()
	ids, err := sqlbase.ScanAll(rows, sqlbase.ScanInt64)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// TxHolds implements driver.Locks: the rows read uncommitted, less the
// committed ones (read afterwards, so a transaction that ends in between
// is left out), are the holds of running transactions.
func (d *Driver) TxHolds(ctx context.Context) ([]driver.LockInfo, error) {
	rows, done, err := d.readAt(ctx, sql.LevelReadUncommitted, "tx_holds_all")
	if err != nil {
		return nil, err
	}
	all, err := sqlbase.ScanTxHolds(rows, true)
	// Its transaction ends before the second read's begins: a client
	// with one connection (Options.MaxConns) has no other.
	done()
	if err != nil {
		return nil, err
	}
	ended, err := d.endedHolds(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(h driver.LockInfo) bool { return ended[h.ID] }), nil
}

// readAt runs a named query in a read-only transaction of the isolation
// level; done closes the rows and ends the transaction.
func (d *Driver) readAt(ctx context.Context, level sql.IsolationLevel, name string) (*sql.Rows, func(), error) {
	tx, err := d.SQL.BeginTx(ctx, &sql.TxOptions{Isolation: level, ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	rows, err := tx.QueryContext(ctx, d.Q(name))
	if err != nil {
		_ = tx.Rollback()
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return rows, func() { _ = rows.Close(); _ = tx.Rollback() }, nil
}
