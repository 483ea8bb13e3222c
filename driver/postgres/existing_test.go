package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/batontest"
)

// TestFastAcquireExistingFollowsUpsert: an identifier's first acquire
// through this driver is fast_acquire's upsert, the next ones
// fast_acquire_existing's update. Both must leave the lock row as the
// other does (the holder, its mode, the counters, the fence moved by
// one and the token equal to it), for a writer and for a reader, and
// both must refuse a second session while the first holds the lock.
func TestFastAcquireExistingFollowsUpsert(t *testing.T) {
	dsn := batontest.NewDSN(t, "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := batontest.Driver(t, dsn).(*Driver)
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	id := driver.Ident{Kind: 1, NS: "x", Name: "e"}
	type row struct {
		fence, nr, nw, np, call, token int64
		sess, client, mode             string
	}
	read := func() (r row) {
		t.Helper()
		if err := d.SQL.QueryRowContext(ctx, `SELECT fence, n_r, n_w, n_p, h_call, h_token, h_session, h_client, h_mode
			FROM baton_lock_idents WHERE kind = 1 AND ns = 'x' AND name = 'e' AND h_id IS NOT NULL AND h_at IS NOT NULL`).
			Scan(&r.fence, &r.nr, &r.nw, &r.np, &r.call, &r.token, &r.sess, &r.client, &r.mode); err != nil {
			t.Fatal(err)
		}
		return r
	}
	var last row
	for i, mode := range []driver.LockMode{driver.ModeWrite, driver.ModeWrite, driver.ModeRead} {
		existing := d.seen.has(id)
		if existing != (i > 0) {
			t.Fatalf("acquire %d: the identifier seen %v", i, existing)
		}
		p := driver.FastAcquireParams{SessionID: "s1", ClientID: "c1", Ident: id, Mode: mode, CallID: int64(10 + i)}
		r, ok, err := d.LockFastAcquire(ctx, p)
		if err != nil || !ok {
			t.Fatalf("acquire %d: %v, %v", i, ok, err)
		}
		got := read()
		nr, nw := int64(0), int64(1)
		if mode == driver.ModeRead {
			nr, nw = 1, 0
		}
		want := row{fence: got.fence, nr: nr, nw: nw, call: int64(10 + i), token: got.fence, sess: "s1", client: "c1", mode: string(mode)}
		if got != want || r.Token != got.fence || (i > 0 && got.fence != last.fence+1) {
			t.Fatalf("acquire %d (update %v): row %+v, token %d; want %+v, the fence after %d", i, existing, got, r.Token, want, last.fence)
		}
		last = got
		other := p
		other.SessionID, other.Mode = "s2", driver.ModeWrite
		if _, ok, err := d.LockFastAcquire(ctx, other); err != nil || ok {
			t.Fatalf("acquire %d: a second session's writer got %v, %v", i, ok, err)
		}
		if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: 1, NS: "x", Name: "e", InlineOnly: true}); err != nil || n != 1 {
			t.Fatalf("release %d: %d, %v", i, n, err)
		}
	}
	// The upkeep deletes the free row (here at once, with its fence set
	// back a second, as ident_purge_idle would find it): the update finds
	// nothing, and the upsert after it makes the row again, its fence
	// from the clock.
	if _, err := d.SQL.ExecContext(ctx, `DELETE FROM baton_lock_idents WHERE kind = 1 AND ns = 'x' AND name = 'e' AND h_id IS NULL`); err != nil {
		t.Fatal(err)
	}
	r, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: "s1", ClientID: "c1", Ident: id, Mode: driver.ModeWrite, CallID: 20})
	if err != nil || !ok || r.Token <= last.fence || read().token != r.Token {
		t.Fatalf("acquire after the row was deleted: %+v %v %v; want a token above %d", r, ok, err, last.fence)
	}
}
