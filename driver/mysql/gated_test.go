package mysql

import (
	"database/sql"
	"testing"

	"github.com/batonhq/baton/driver"
)

// TestGatedInOneCall: the slow path's calls decide a gated identifier
// themselves, a gate that another transaction holds
// counted as a granted instance of nobody's session, where they had left
// it to the engine's transaction: a request waits behind a write gate
// (a try is refused) and is granted by LockRegrant once the gate is
// free; a reader is granted beside a read gate and a writer waits behind
// it; a release and a withdrawal hand on past the read gate to readers
// only; the undo of a call that may still run withdraws on a gated
// identifier.
func TestGatedInOneCall(t *testing.T) {
	ctx, d := freshDriver(t)
	g := driver.Ident{Kind: driver.KindService, NS: "gt", Name: "g"}
	if err := d.TxPrepare(ctx, g); err != nil {
		t.Fatal(err)
	}
	hold := func(mode driver.LockMode) *sql.Tx {
		t.Helper()
		tx, err := d.SQL.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback() }) // a failed test's too: the gate blocks the database's drop
		var one int
		if err := tx.QueryRowContext(ctx, d.gateQuery(mode, false), g.Kind, []byte(g.NS), []byte(g.Name)).Scan(&one); err != nil {
			t.Fatalf("the gate in %s: %v", mode, err)
		}
		return tx
	}
	request := func(sess string, mode driver.LockMode, try bool) (driver.Request, error) {
		t.Helper()
		return d.request(ctx, driver.RequestParams{SessionID: sess, ClientID: "c", Ident: g, Mode: mode, CallID: 3, TryOnce: try}, 0)
	}
	queued := func(sess string, mode driver.LockMode, what string) driver.Request {
		t.Helper()
		r, err := request(sess, mode, false)
		if err != nil || r.Status != driver.StatusPending {
			t.Fatalf("%s: %+v %v; want it waiting", what, r, err)
		}
		return r
	}
	status := func(r driver.Request) driver.Request {
		t.Helper()
		st, err := d.LockRequestStatuses(ctx, []int64{r.ID})
		if err != nil {
			t.Fatal(err)
		}
		return st[r.ID]
	}
	regrant := func() {
		t.Helper()
		if handled, err := d.LockRegrant(ctx, []driver.Ident{g, g}); err != nil || !handled {
			t.Fatalf("LockRegrant: %v %v; want it handled", handled, err)
		}
	}

	// A write gate: everyone waits, a try is refused.
	gate := hold(driver.ModeWrite)
	w1 := queued("s1", driver.ModeWrite, "a writer behind a write gate")
	if _, err := request("s2", driver.ModeRead, true); err != driver.ErrWouldWait {
		t.Fatalf("a reader's try behind a write gate: %v; want ErrWouldWait", err)
	}
	r2 := queued("s2", driver.ModeRead, "a reader behind a write gate")
	regrant()
	if st := status(w1); st.Status != driver.StatusPending {
		t.Fatalf("the writer after a hand-on while the gate is held: %+v; want it waiting", st)
	}
	_ = gate.Rollback()
	regrant()
	w1 = status(w1)
	if w1.Status != driver.StatusGranted || w1.Token == 0 || status(r2).Status != driver.StatusPending {
		t.Fatalf("after the gate's end: writer %+v, reader %+v; want the writer granted, the reader waiting", w1, status(r2))
	}

	// A read gate: the writer's release hands on to the reader only, and
	// a writer behind waits.
	gate = hold(driver.ModeRead)
	if n, waiting, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: g.Kind, NS: g.NS, Name: g.Name}); err != nil || n != 1 || len(waiting) != 0 {
		t.Fatalf("the writer's release: %d %v %v; want 1, nothing left to the engine", n, waiting, err)
	}
	if st := status(r2); st.Status != driver.StatusGranted || st.Token <= w1.Token {
		t.Fatalf("the reader beside a read gate: %+v; want it granted after token %d", st, w1.Token)
	}
	w3 := queued("s3", driver.ModeWrite, "a writer behind a read gate")
	r4 := queued("s4", driver.ModeRead, "a reader behind a waiting writer")
	// The reader withdrawn: the writer still waits for the gate.
	if handled, err := d.LockRequestsRemove(ctx, []driver.Request{{ID: r2.ID, Ident: g}}); err != nil || !handled {
		t.Fatalf("a withdrawal on a gated identifier: %v %v; want it handled", handled, err)
	}
	if st := status(w3); st.Status != driver.StatusPending {
		t.Fatalf("the writer behind a read gate after the reader's withdrawal: %+v; want it waiting", st)
	}
	// The undo of s3's call, which may still run: the reader behind is
	// granted beside the read gate.
	if handled, err := d.LockCallWithdraw(ctx, "s3", 3, []driver.Ident{g}, true); err != nil || !handled {
		t.Fatalf("the undo of a call on a gated identifier: %v %v; want it handled", handled, err)
	}
	if st, gone := status(r4), status(w3); st.Status != driver.StatusGranted || gone.Status != "" {
		t.Fatalf("after the undo: reader %+v, withdrawn writer %+v; want the reader granted, the writer gone", st, gone)
	}
	_ = gate.Rollback()
}
