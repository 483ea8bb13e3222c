package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/sqlite"
	"github.com/batonhq/baton/internal/batontest"
)

// TestTurnstiles: SQLite's turnstiles are in the process and shared by
// the clients of one file. A session takes a free one with the lock; a
// second client's session waits for it at most its bound (or not at all)
// and gets it when the first releases the lock, or when the first's
// session ends, and then the lock too; the session's second turnstile
// on an identifier is refused (its next instance is the table's); a read
// lock has none.
func TestTurnstiles(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "t.db")
	open := func() *sqlite.Driver { return batontest.Migrated(t, dsn).(*sqlite.Driver) }
	d1, d2 := open(), open()
	id := driver.Ident{Kind: driver.KindService, NS: "ns", Name: "x"}
	params := func(session string, call int64) driver.FastAcquireParams {
		return driver.FastAcquireParams{SessionID: session, ClientID: "c-" + session, Ident: id, Mode: driver.ModeWrite, CallID: call}
	}
	type result struct {
		ok, waited, usable bool
		err                error
	}
	acquire := func(d *sqlite.Driver, p driver.FastAcquireParams, wait time.Duration) result {
		_, ok, waited, usable, err := d.LockTurnstileAcquire(ctx, p, wait)
		return result{ok, waited, usable, err}
	}
	want := func(what string, got, want result) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: got %+v, want %+v", what, got, want)
		}
	}

	want("a free turnstile", acquire(d1, params("a", 1), time.Second), result{ok: true, usable: true})
	if !d1.LockTurnstileHeld("a", driver.Ident{Kind: id.Kind, NS: id.NS}) {
		t.Fatal("the holder's turnstile is not held in its namespace")
	}
	want("the holder's second instance", acquire(d1, params("a", 2), time.Second), result{})
	read := params("b", 1)
	read.Mode = driver.ModeRead
	want("a read lock", acquire(d2, read, time.Second), result{})
	want("a held turnstile, tried once", acquire(d2, params("b", 2), 0), result{waited: true, usable: true})
	began := time.Now()
	want("a held turnstile, waited for", acquire(d2, params("b", 3), 30*time.Millisecond), result{waited: true, usable: true})
	if waited := time.Since(began); waited < 30*time.Millisecond {
		t.Fatalf("the wait ended after %v, before its bound", waited)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, _, _, err := d2.LockTurnstileAcquire(cctx, params("b", 4), time.Second); err == nil {
		t.Fatal("a wait in an ended context reported no error")
	}

	// The release lets the turnstile go after it: the waiter gets both.
	ch := make(chan result, 1)
	go func() { ch <- acquire(d2, params("b", 5), 20*time.Second) }()
	time.Sleep(20 * time.Millisecond)
	if n, _, err := d1.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "a", Kind: id.Kind, NS: id.NS, Name: id.Name, InlineOnly: true}); err != nil || n != 1 {
		t.Fatalf("release: %d, %v", n, err)
	}
	want("the waiter after the release", <-ch, result{ok: true, waited: true, usable: true})
	if d1.LockTurnstileHeld("a", id) {
		t.Fatal("the released session still holds the turnstile")
	}

	// The end of the holder's session lets its turnstile go: the waiter
	// gets the turnstile, not the lock (still held in the table).
	go func() { ch <- acquire(d1, params("c", 1), 20*time.Second) }()
	time.Sleep(20 * time.Millisecond)
	d2.LockTurnstileEnd("b")
	want("the waiter after the holder's end", <-ch, result{waited: true, usable: true})
	if !d1.LockTurnstileHeld("c", id) {
		t.Fatal("the waiter refused by the table does not keep the turnstile")
	}
	d1.LockTurnstileDrop(ctx, "c", id)
	want("the turnstile dropped", acquire(d2, params("d", 1), 0), result{usable: true})
}
