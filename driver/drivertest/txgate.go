package drivertest

import (
	"errors"
	"slices"
	"testing"

	"github.com/batonhq/baton/driver"
)

// callerTx is a transaction of the driver's own pool standing for a
// program's (the sqlbase-based backends' Tx offers one).
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
func gate(t *testing.T, tl driver.TxLocker, ct driver.CallerTx, id driver.Ident, mode driver.LockMode) error {
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
	tl := d.Locks()
	id := driver.Ident{Kind: driver.KindService, NS: "tx", Name: "g"}
	for _, mode := range []driver.LockMode{driver.ModeWrite, driver.ModeRead} {
		tx, ct := callerTx(t, d)
		must(t, gate(t, tl, ct, id, mode))
		must(t, tl.TxHoldCaller(testCtx(t), ct, driver.TxHold{Ident: id, Mode: mode, Host: "h", PID: 1, Owner: "o"}))
		wantGateHeld(t, d, tl, id, mode)
		must(t, tx.Rollback())
		wantGateHeld(t, d, tl, id, "")
	}
	checkGateRefused(t, d, tl)
	checkGatedFound(t, d, tl)
}

// checkGatedFound: the poll of waiting requests finds the gated names
// among theirs, by TxGatedAmong and with the requests' statuses
// (LockRequestStatusesGated).
func checkGatedFound(t *testing.T, d driver.Driver, tl driver.TxLocker) {
	if tl.TxGateSerial() {
		return // no session waits while a transaction holds a gate
	}
	newSession(t, d, "s9", "Cs9", hour)
	gated := driver.Ident{Kind: driver.KindService, NS: "tx", Name: "w1"}
	free := driver.Ident{Kind: driver.KindService, NS: "tx", Name: "w2"}
	var ids []int64
	for _, id := range []driver.Ident{gated, free} {
		r := queueWaiter(t, d, driver.Request{SessionID: "s9", ClientID: "Cs9", Ident: id, Mode: driver.ModeWrite, Status: driver.StatusPending, CallID: 9}, 0, 0)
		ids = append(ids, r.ID)
	}
	look := func(want []driver.Ident, when string) {
		t.Helper()
		got, err := tl.TxGatedAmong(testCtx(t), []driver.Ident{gated, free})
		must(t, err)
		failIf(t, !sameIdents(got, want), "TxGatedAmong %s: %v, want %v", when, got, want)
		st, got, err := d.Locks().LockRequestStatusesGated(testCtx(t), ids)
		must(t, err)
		failIf(t, len(st) != 2 || st[ids[0]].Status != driver.StatusPending || st[ids[1]].Ident != free,
			"LockRequestStatusesGated %s: statuses %+v, want both pending requests", when, st)
		failIf(t, !sameIdents(got, want), "LockRequestStatusesGated %s: gated %v, want %v", when, got, want)
	}
	look(nil, "before any gate")
	must(t, tl.TxPrepare(testCtx(t), gated))
	look([]driver.Ident{gated}, "once one name is gated")
}

// sameIdents reports whether a and b hold the same identifiers.
func sameIdents(a, b []driver.Ident) bool {
	if len(a) != len(b) {
		return false
	}
	for _, id := range a {
		if !slices.Contains(b, id) {
			return false
		}
	}
	return true
}

// gateHeld reads, under id's lock row, whether id is marked gated and the
// mode its gate is held in ("" for none).
func gateHeld(t *testing.T, d driver.Driver, tl driver.TxLocker, id driver.Ident) (gated bool, mode driver.LockMode) {
	t.Helper()
	inTx(t, d, func(tx driver.Tx) {
		gated = lockRow(t, tx, id).Gated
		var err error
		mode, err = tl.TxGateHeld(testCtx(t), tx, id)
		must(t, err)
	})
	return gated, mode
}

// wantGateHeld fails unless id's gate is held in mode want ("" for none)
// as the sessions' grants see it: the identifier gated, TxGateHeld and
// TxHolds. Under a serial gate (the write lock) nobody else could be
// asking, and there is nothing to see.
func wantGateHeld(t *testing.T, d driver.Driver, tl driver.TxLocker, id driver.Ident, want driver.LockMode) {
	t.Helper()
	if tl.TxGateSerial() {
		return
	}
	gated, mode := gateHeld(t, d, tl, id)
	failIf(t, !gated, "%v is not gated once a transaction took its gate", id)
	failIf(t, mode != want, "TxGateHeld = %q, want %q", mode, want)
	holds, err := tl.TxHolds(testCtx(t))
	must(t, err)
	n := countHolds(holds, id, want)
	failIf(t, (want != "") != (n > 0), "TxHolds lists %d holds of %v in mode %q: %+v", n, id, want, holds)
}

// countHolds counts the granted holds of id in the mode.
func countHolds(holds []driver.LockInfo, id driver.Ident, mode driver.LockMode) int {
	n := 0
	for _, h := range holds {
		if h.Ident == id && h.Mode == mode && h.Status == driver.StatusGranted {
			n++
		}
	}
	return n
}

// checkGateRefused: beside a session's write instance, a gate is refused
// (where the backend checks) and given back.
func checkGateRefused(t *testing.T, d driver.Driver, tl driver.TxLocker) {
	newSession(t, d, "s1", "Cs1", hour)
	other := driver.Ident{Kind: driver.KindService, NS: "tx", Name: "held"}
	fastAcquire(t, d, "s1", other, driver.ModeWrite)
	_, ct := callerTx(t, d)
	if !tl.TxGateChecks() {
		return
	}
	err := gate(t, tl, ct, other, driver.ModeRead)
	failIf(t, !errors.Is(err, driver.ErrGateSession), "gate beside a session's write lock: %v, want ErrGateSession", err)
	if tl.TxGateSerial() {
		return
	}
	_, held := gateHeld(t, d, tl, other)
	failIf(t, held != "", "a refused gate is still held (%q)", held)
}
