package postgres

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/sqldriver"
)

var _ driver.TxLocker = (*Driver)(nil)

// TxGateSerial implements driver.TxLocker: PostgreSQL's gates are
// transaction-level advisory locks; other writers go on.
func (d *Driver) TxGateSerial() bool { return false }

// TxGate implements driver.TxLocker with {p}tx_gate (migration 020), which
// waits under lock_timeout and never aborts the caller's transaction.
func (d *Driver) TxGate(ctx context.Context, tx driver.CallerTx, id driver.Ident, mode string, wait time.Duration) error {
	ms := int64(-1)
	if wait >= 0 {
		ms = min(int64(math.Ceil(float64(wait)/float64(time.Millisecond))), math.MaxInt32)
	}
	var out string
	if err := tx.ScanRow(ctx, d.Q("tx_gate"), []any{id.Kind, []byte(id.NS), []byte(id.Name), mode, ms}, &out); err != nil {
		return fmt.Errorf("tx_gate: %w", err)
	}
	switch out {
	case "ok":
		return nil
	case "busy":
		return driver.ErrGateBusy
	case "deadlock":
		return driver.ErrGateDeadlock
	}
	return fmt.Errorf("tx_gate: unexpected answer %q", out)
}

// TxGateHeld implements driver.TxLocker: {p}gate_held tries the advisory
// lock at session level and lets it go at once.
func (d *Driver) TxGateHeld(ctx context.Context, tx driver.Tx, id driver.Ident) (string, error) {
	var mode string
	err := tx.(*sqldriver.Tx).Row(ctx, "tx_gate_held", id.Kind, []byte(id.NS), []byte(id.Name)).Scan(&mode)
	if err != nil {
		return "", fmt.Errorf("tx_gate_held: %w", err)
	}
	return mode, nil
}

// TxHoldCaller implements driver.TxLocker: the transaction's id, whose
// status pg_xact_status tells.
func (d *Driver) TxHoldCaller(ctx context.Context, tx driver.CallerTx, _ driver.TxHold) (string, error) {
	var name string
	if err := tx.ScanRow(ctx, d.Q("tx_name"), nil, &name); err != nil {
		return "", fmt.Errorf("tx_name: %w", err)
	}
	return name, nil
}

// TxHolds implements driver.TxLocker.
func (d *Driver) TxHolds(ctx context.Context) ([]driver.LockInfo, error) {
	rows, err := d.QueryNamed(ctx, nil, "tx_holds")
	if err != nil {
		return nil, err
	}
	return sqldriver.ScanTxHolds(rows, false)
}

// TxHoldRecord implements driver.TxLocker.
func (d *Driver) TxHoldRecord(ctx context.Context, tx driver.Tx, h driver.TxHold) error {
	if h.Txn == "" { // not named: gated all the same, not recorded
		_, err := tx.(*sqldriver.Tx).Exec(ctx, "tx_ident_gate", h.Kind, []byte(h.NS), []byte(h.Name))
		return err
	}
	_, err := tx.(*sqldriver.Tx).Exec(ctx, "tx_hold_record", h.Kind, []byte(h.NS), []byte(h.Name), h.Mode, h.Txn, h.Host, h.PID, h.Owner)
	if err != nil {
		return fmt.Errorf("tx_hold_record: %w", err)
	}
	return nil
}

// TxGated implements driver.TxLocker.
func (d *Driver) TxGated(ctx context.Context, id driver.Ident) (bool, error) {
	return sqldriver.Gated(ctx, d.DB, id)
}
