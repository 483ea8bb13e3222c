package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/batontest"
)

// TestReleaseRows: a session's request rows released by the one name that
// can hold them (release_rows): the counters stay exact, a waiting writer
// is granted by the same statement once the last reader leaves (its
// hand-off reads the requests after the statement's delete), and a
// session that also has an inline holder in the namespace is left to the
// full release, which releases both.
func TestReleaseRows(t *testing.T) {
	ctx, _, d := migrated(t)
	acquire := func(sess, name string, mode driver.LockMode) driver.Request {
		t.Helper()
		r, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: sess, ClientID: "c1",
			Ident: driver.Ident{Kind: 1, NS: "rr", Name: name}, Mode: mode, CallID: 7})
		if err != nil || !ok {
			t.Fatalf("%s's %s of %s: %v, %v", sess, mode, name, ok, err)
		}
		return r
	}
	counters := func(name string) (nr, nw, np int64) {
		t.Helper()
		if err := d.SQL.QueryRowContext(ctx, `SELECT n_r, n_w, n_p FROM baton_lock_idents WHERE kind = 1 AND ns = 'rr' AND name = $1`,
			[]byte(name)).Scan(&nr, &nw, &np); err != nil {
			t.Fatal(err)
		}
		return
	}
	rows := func(sess string) (n int) {
		t.Helper()
		if err := d.SQL.QueryRowContext(ctx, `SELECT count(*) FROM baton_lock_requests WHERE session_id = $1`, sess).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return
	}
	byRows := func(sess, name string) driver.FastReleaseParams {
		return driver.FastReleaseParams{SessionID: sess, Kind: 1, NS: "rr", RowsOn: name}
	}

	// Two readers: the first an inline holder, the second a request row.
	if r := acquire("r1", "a", driver.ModeRead); !r.Inline {
		t.Fatal("the first reader is not the inline holder")
	}
	if r := acquire("r2", "a", driver.ModeRead); r.Inline {
		t.Fatal("the second reader is not a request row")
	}
	// A writer waits behind them (a request needs its session's row).
	batontest.DriverTx(t, d, func(ctx context.Context, tx driver.Tx) error {
		return tx.SessionInsert(ctx, driver.Session{ID: "w", ClientID: "c1", CreatedAt: time.Now()}, time.Minute)
	})
	w, err := d.LockRequest(ctx, driver.RequestParams{SessionID: "w", ClientID: "c1", Ident: driver.Ident{Kind: 1, NS: "rr", Name: "a"}, Mode: driver.ModeWrite, CallID: 8})
	if err != nil || w.Status != driver.StatusPending {
		t.Fatalf("the writer: %+v, %v; want it pending", w, err)
	}
	if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "r1", Kind: 1, NS: "rr", InlineOnly: true}); err != nil || n != 1 {
		t.Fatalf("the inline reader's release: %d, %v", n, err)
	}
	if nr, nw, np := counters("a"); nr != 1 || nw != 0 || np != 1 {
		t.Fatalf("counters with one reader left and the writer waiting: r %d w %d p %d", nr, nw, np)
	}
	var contended []driver.Ident
	p := byRows("r2", "a")
	p.Contended = func(id driver.Ident) { contended = append(contended, id) }
	n, done, err := d.releaseRows(ctx, p)
	if err != nil || !done || n != 1 {
		t.Fatalf("release_rows of the last reader: %d, done %v, %v; want 1 released by it", n, done, err)
	}
	if rows("r2") != 0 {
		t.Fatal("the reader's request row is still there")
	}
	var status string
	var token int64
	if err := d.SQL.QueryRowContext(ctx, `SELECT status, token FROM baton_lock_requests WHERE id = $1`, w.ID).Scan(&status, &token); err != nil {
		t.Fatal(err)
	}
	if status != string(driver.StatusGranted) {
		t.Fatalf("the waiting writer after the last reader left: %s; want it granted by the release", status)
	}
	if nr, nw, np := counters("a"); nr != 0 || nw != 1 || np != 0 {
		t.Fatalf("counters after the hand-off: r %d w %d p %d; want the writer alone", nr, nw, np)
	}
	if len(contended) != 1 || contended[0].Name != "a" {
		t.Fatalf("the release reported %v as handed on; want a", contended)
	}
	if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "w", Kind: 1, NS: "rr", Name: "a", RowsOn: "a"}); err != nil || n != 1 {
		t.Fatalf("the writer's release: %d, %v", n, err)
	}

	// Nothing to release: no row, the full release answers.
	if n, done, err := d.releaseRows(ctx, byRows("r2", "a")); err != nil || done || n != 0 {
		t.Fatalf("release_rows of nothing: %d, done %v, %v; want not done", n, done, err)
	}

	// s has a request row on b (beside r3's inline reader) and an inline
	// holder on c: release_rows leaves everything to the full release.
	acquire("r3", "b", driver.ModeRead)
	if r := acquire("s", "b", driver.ModeRead); r.Inline {
		t.Fatal("s's reader beside r3 is not a request row")
	}
	if r := acquire("s", "c", driver.ModeWrite); !r.Inline {
		t.Fatal("s's writer on a free name is not the inline holder")
	}
	if n, done, err := d.releaseRows(ctx, byRows("s", "b")); err != nil || done || n != 0 {
		t.Fatalf("release_rows beside an inline holder: %d, done %v, %v; want not done", n, done, err)
	}
	if nr, _, _ := counters("b"); nr != 2 || rows("s") != 1 {
		t.Fatalf("release_rows that did not run changed b: %d readers, s has %d rows", nr, rows("s"))
	}
	if n, _, err := d.LockFastRelease(ctx, byRows("s", "b")); err != nil || n != 2 {
		t.Fatalf("s's release of the namespace: %d, %v; want its row on b and its inline holder on c", n, err)
	}
	if nr, _, _ := counters("b"); nr != 1 || rows("s") != 0 {
		t.Fatalf("after s's release: b has %d readers, s %d rows", nr, rows("s"))
	}
	if _, nw, _ := counters("c"); nw != 0 {
		t.Fatalf("c still counts %d writers", nw)
	}

	// Several instances of one name (a reader's re-entry beside another
	// session's reader): all released, counted in the statement's row.
	for range 3 {
		acquire("m", "b", driver.ModeRead)
	}
	if n, done, err := d.releaseRows(ctx, byRows("m", "b")); err != nil || !done || n != 3 {
		t.Fatalf("release_rows of three instances: %d, done %v, %v", n, done, err)
	}
	if nr, _, _ := counters("b"); nr != 1 {
		t.Fatalf("b has %d readers after m's release; want r3's", nr)
	}
}
