package drivertest

import (
	"errors"
	"testing"

	"github.com/batonhq/baton/driver"
)

// callerTx is a transaction of the driver's own pool standing for a
// program's (the sqldriver-based backends' Tx offers one).
func callerTx(t *testing.T, d driver.Driver) (driver.Tx, driver.CallerTx) {
	t.Helper()
	tx, err := d.Begin(testCtx(t))
	must(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	c, ok := tx.(interface{ Caller() driver.CallerTx })
	if !ok {
		t.Skipf("%T offers no caller transaction", tx)
	}
	return tx, c.Caller()
}

// gate takes id's gate the way the engine does: readied first where the
// backend does not check, again after ErrGateUngated.
func gate(t *testing.T, tl driver.TxLocker, ct driver.CallerTx, id driver.Ident, mode string) error {
	t.Helper()
	ctx := testCtx(t)
	if !tl.TxGateChecks() {
		must(t, tl.TxPrepare(ctx, id))
	}
	for range 2 {
		_, err := tl.TxGate(ctx, ct, id, mode, 0, true)
		if !errors.Is(err, driver.ErrGateUngated) {
			return err
		}
		must(t, tl.TxPrepare(ctx, id))
	}
	t.Fatalf("gate of %v: still not gated after TxPrepare", id)
	return nil
}

// testTxGate: a transaction's gate, as sessions' grants see it (held in
// its mode until the transaction ends, the identifier marked gated, listed
// by TxHolds), and a session's instance refusing it.
func testTxGate(t *testing.T, d driver.Driver) {
	tl, ok := d.(driver.TxLocker)
	if !ok {
		t.Skip("no transaction-scoped locks")
	}
	ctx := testCtx(t)
	id := driver.Ident{Kind: driver.KindService, NS: "tx", Name: "g"}
	held := func(want string) {
		t.Helper()
		if tl.TxGateSerial() {
			return // the write lock: nobody else could be asking
		}
		inTx(t, d, func(tx driver.Tx) {
			st, err := tx.LockIdentLock(ctx, []driver.Ident{id})
			must(t, err)
			failIf(t, !st[0].Gated, "%v is not gated once a transaction took its gate", id)
			mode, err := tl.TxGateHeld(ctx, tx, id)
			must(t, err)
			failIf(t, mode != want, "TxGateHeld = %q, want %q", mode, want)
		})
		holds, err := tl.TxHolds(ctx)
		must(t, err)
		n := 0
		for _, h := range holds {
			if h.Ident == id && h.Mode == want && h.Status == driver.StatusGranted {
				n++
			}
		}
		failIf(t, (want != "") != (n > 0), "TxHolds lists %d holds of %v in mode %q: %+v", n, id, want, holds)
	}
	for _, mode := range []string{driver.ModeWrite, driver.ModeRead} {
		tx, ct := callerTx(t, d)
		must(t, gate(t, tl, ct, id, mode))
		must(t, tl.TxHoldCaller(ctx, ct, driver.TxHold{Ident: id, Mode: mode, Host: "h", PID: 1, Owner: "o"}))
		held(mode)
		must(t, tx.Rollback())
		held("")
	}
	// A session's write instance: the gate is refused (and given back).
	newSession(t, d, "s1", "Cs1", hour)
	other := driver.Ident{Kind: driver.KindService, NS: "tx", Name: "held"}
	fastAcquire(t, d, "s1", other, driver.ModeWrite)
	_, ct := callerTx(t, d)
	if tl.TxGateChecks() {
		err := gate(t, tl, ct, other, driver.ModeRead)
		failIf(t, !errors.Is(err, driver.ErrGateSession), "gate beside a session's write lock: %v, want ErrGateSession", err)
		if !tl.TxGateSerial() {
			held := ""
			inTx(t, d, func(tx driver.Tx) {
				_, err := tx.LockIdentLock(ctx, []driver.Ident{other})
				must(t, err)
				held, err = tl.TxGateHeld(ctx, tx, other)
				must(t, err)
			})
			failIf(t, held != "", "a refused gate is still held (%q)", held)
		}
	}
}
