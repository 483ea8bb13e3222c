package postgres

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// TxGateChecks implements driver.Locks: in READ COMMITTED.
func (d *Driver) TxGateChecks() bool { return true }

// TxGateSerial implements driver.Locks: PostgreSQL's gates are
// transaction-level advisory locks; other writers go on.
func (d *Driver) TxGateSerial() bool { return false }

// TxPrepare implements driver.Locks: the identifier's row, gated.
func (d *Driver) TxPrepare(ctx context.Context, id driver.Ident) error {
	if _, err := d.ExecNamed(ctx, nil, "tx_prepare", id.Kind, []byte(id.NS), []byte(id.Name)); err != nil {
		return fmt.Errorf("tx_prepare: %w", err)
	}
	return nil
}

// TxGate implements driver.Locks with {p}tx_gate: one
// call, which waits under lock_timeout, checks the sessions in READ
// COMMITTED and never aborts the caller's transaction.
func (d *Driver) TxGate(ctx context.Context, tx driver.CallerTx, id driver.Ident, mode driver.LockMode, wait time.Duration, check bool) (bool, error) {
	var out string
	if err := tx.ScanRow(ctx, d.Q("tx_gate"), []any{id.Kind, []byte(id.NS), []byte(id.Name), mode, gateMillis(wait), check}, &out); err != nil {
		return false, fmt.Errorf("tx_gate: %w", err)
	}
	a, ok := gateAnswers[out]
	if !ok {
		return false, fmt.Errorf("tx_gate: unexpected answer %q", out)
	}
	return a.checked, a.err
}

// gateMillis is {p}tx_gate's wait: whole milliseconds, -1 for as long as
// it takes.
func gateMillis(wait time.Duration) int64 {
	if wait < 0 {
		return -1
	}
	return min(int64(math.Ceil(float64(wait)/float64(time.Millisecond))), math.MaxInt32)
}

// gateAnswers are TxGate's results for {p}tx_gate's answers.
var gateAnswers = map[string]struct {
	checked bool
	err     error
}{
	"ok":        {true, nil},
	"unchecked": {false, nil},
	"session":   {false, driver.ErrGateSession},
	"ungated":   {false, driver.ErrGateUngated},
	"busy":      {false, driver.ErrGateBusy},
	"deadlock":  {false, driver.ErrGateDeadlock},
}

// TxGateHeld implements driver.Locks: {p}gate_held's probe is a
// transaction-level lock of tx.
func (d *Driver) TxGateHeld(ctx context.Context, tx driver.Tx, id driver.Ident) (driver.LockMode, error) {
	var mode driver.LockMode
	err := tx.(*sqlbase.Tx).Row(ctx, "tx_gate_held", id.Kind, []byte(id.NS), []byte(id.Name)).Scan(&mode)
	if err != nil {
		return "", fmt.Errorf("tx_gate_held: %w", err)
	}
	return mode, nil
}

// LockRequestStatusesGated implements driver.Locks.
func (d *Driver) LockRequestStatusesGated(ctx context.Context, ids []int64) (map[int64]driver.Request, []driver.Ident, error) {
	return sqlbase.StatusesGated(ctx, d.DB, ids)
}

// TxGatedAmong implements driver.Locks.
func (d *Driver) TxGatedAmong(ctx context.Context, ids []driver.Ident) ([]driver.Ident, error) {
	return sqlbase.GatedAmong(ctx, d.DB, ids)
}

// TxHoldCaller implements driver.Locks: pg_locks lists the gates.
func (d *Driver) TxHoldCaller(context.Context, driver.CallerTx, driver.TxHold) error { return nil }

// TxHolds implements driver.Locks from pg_locks.
func (d *Driver) TxHolds(ctx context.Context) ([]driver.LockInfo, error) {
	rows, err := d.QueryNamed(ctx, nil, "tx_holds")
	if err != nil {
		return nil, err
	}
	return sqlbase.ScanTxHolds(rows, false)
}
