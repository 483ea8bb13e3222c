package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	// A reader beside a reader: the update refuses the second, and
	// fast_acquire_shared grants it a request row.
	rp := driver.FastAcquireParams{SessionID: "s1", ClientID: "c1", Ident: id, Mode: driver.ModeRead, CallID: 30}
	for _, sess := range []string{"s1", "s2"} {
		rp.SessionID = sess
		r, ok, err := d.LockFastAcquire(ctx, rp)
		if err != nil || !ok || r.Inline != (sess == "s1") {
			t.Fatalf("reader %s: %+v %v %v; want granted, inline only for the first", sess, r, ok, err)
		}
	}
	for _, sess := range []string{"s1", "s2"} {
		if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: sess, Kind: 1, NS: "x", Name: "e"}); err != nil || n != 1 {
			t.Fatalf("release of reader %s: %d, %v", sess, n, err)
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

// TestTurnstileAcquireTakesOnce: query turnstile_acquire takes the
// turnstile once (a session-level advisory lock taken twice would need
// two unlocks, and the release's one would leave it held), both when it
// is free and after a wait, leaves the line's own lock_timeout as it was,
// puts it back before its upsert (which may wait for the lock row longer
// than the turnstile's wait), and gives up a wait that runs out with
// lock_not_available.
func TestTurnstileAcquireTakesOnce(t *testing.T) {
	dsn := batontest.NewDSN(t, "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := batontest.Driver(t, dsn).(*Driver)
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	line, other := pgxConn(t, dsn), pgxConn(t, dsn)
	if _, err := line.Exec(ctx, "SET lock_timeout = '7s'"); err != nil {
		t.Fatal(err)
	}
	id := driver.Ident{Kind: 1, NS: "x", Name: "t"}
	key := d.turnstileKey(id)
	take := func(waitMS int32) (granted, held, waited bool, err error) {
		var hid, token, inc *int64
		err = line.QueryRow(ctx, d.Q("turnstile_acquire"), int16(1), []byte("x"), []byte("t"), TurnstileClass, key, waitMS,
			"s1", "c1", int64(1)).Scan(&hid, &token, &inc, &held, &waited)
		return hid != nil, held, waited, err
	}
	unlocks := func() (n int) {
		t.Helper()
		for {
			var ok bool
			if err := line.QueryRow(ctx, "SELECT pg_advisory_unlock($1, $2)", TurnstileClass, key).Scan(&ok); err != nil {
				t.Fatal(err)
			}
			if !ok {
				return n
			}
			n++
		}
	}
	timeout := func() string {
		t.Helper()
		var v string
		if err := line.QueryRow(ctx, "SHOW lock_timeout").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	release := func() {
		t.Helper()
		if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: 1, NS: "x", Name: "t", InlineOnly: true}); err != nil || n != 1 {
			t.Fatalf("release: %d, %v", n, err)
		}
	}
	if granted, held, waited, err := take(100); err != nil || !granted || !held || waited {
		t.Fatalf("free: granted %v, held %v, waited %v, %v", granted, held, waited, err)
	}
	if n := unlocks(); n != 1 || timeout() != "7s" {
		t.Fatalf("free: the turnstile was held %d times, lock_timeout %s; want once, 7s", n, timeout())
	}
	release()
	// Held by another connection, let go 50 ms later.
	if _, err := other.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", TurnstileClass, key); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = other.Exec(context.Background(), "SELECT pg_advisory_unlock($1, $2)", TurnstileClass, key)
	}()
	if granted, held, waited, err := take(5000); err != nil || !granted || !held || !waited {
		t.Fatalf("after a wait: granted %v, held %v, waited %v, %v", granted, held, waited, err)
	}
	if n := unlocks(); n != 1 || timeout() != "7s" {
		t.Fatalf("after a wait: the turnstile was held %d times, lock_timeout %s; want once, 7s", n, timeout())
	}
	release()
	// After a wait of at most 100 ms, the upsert waits 300 ms for the
	// lock row (a transaction of the test holds it): the wait's
	// lock_timeout must be put back before it.
	if _, err := other.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", TurnstileClass, key); err != nil {
		t.Fatal(err)
	}
	tx, err := d.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "SELECT 1 FROM baton_lock_idents WHERE kind = 1 AND ns = 'x' AND name = 't' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		_, _ = other.Exec(context.Background(), "SELECT pg_advisory_unlock($1, $2)", TurnstileClass, key)
		time.Sleep(300 * time.Millisecond)
		_ = tx.Commit()
	}()
	if granted, held, waited, err := take(100); err != nil || !granted || !held || !waited {
		t.Fatalf("a wait, then the row held 300 ms: granted %v, held %v, waited %v, %v", granted, held, waited, err)
	}
	if n := unlocks(); n != 1 {
		t.Fatalf("the turnstile was held %d times, want once", n)
	}
	release()
	// Held for good: a try takes nothing; a wait runs out.
	if _, err := other.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", TurnstileClass, key); err != nil {
		t.Fatal(err)
	}
	if granted, held, waited, err := take(0); err != nil || granted || held || !waited {
		t.Fatalf("a try on a held turnstile: granted %v, held %v, waited %v, %v", granted, held, waited, err)
	}
	if _, _, _, err := take(30); !lockTimedOut(err) {
		t.Fatalf("a wait on a held turnstile: %v, want lock_not_available", err)
	}
	if n := unlocks(); n != 0 || timeout() != "7s" {
		t.Fatalf("after the waits that took nothing: held %d times, lock_timeout %s", n, timeout())
	}
}

// pgxConn opens a connection of the test's own, closed when it ends.
func pgxConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestFastAcquireManyReadersSeen: many names whose rows the driver has
// seen. A reader of free names takes them by fast_acquire_many_existing's
// update (inline holders); a second session's reader beside it is refused
// there and goes on to {p}fast_acquire_many, which grants it request
// rows; a writer is refused by both statements.
func TestFastAcquireManyReadersSeen(t *testing.T) {
	dsn := batontest.NewDSN(t, "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := batontest.Driver(t, dsn).(*Driver)
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	names := []string{"r1", "r2", "r3"}
	p := func(sess string, mode driver.LockMode) driver.FastAcquireParams {
		return driver.FastAcquireParams{SessionID: sess, ClientID: "c1", Mode: mode, CallID: 3, Ident: driver.Ident{Kind: 1, NS: "m"}}
	}
	release := func(sess string, want int) {
		t.Helper()
		if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: sess, Kind: 1, NS: "m"}); err != nil || n != want {
			t.Fatalf("release of %s: %d, %v; want %d", sess, n, err, want)
		}
	}
	for round, seen := range []bool{false, true} {
		if got := d.seen.hasAll(1, "m", names); got != seen {
			t.Fatalf("round %d: names seen %v", round, got)
		}
		rs, ok, err := d.LockFastAcquireMany(ctx, p("s1", driver.ModeRead), names)
		if err != nil || !ok || len(rs) != 3 || !rs[0].Inline {
			t.Fatalf("round %d: first reader %+v %v %v; want three inline holders", round, rs, ok, err)
		}
		rs, ok, err = d.LockFastAcquireMany(ctx, p("s2", driver.ModeRead), names)
		if err != nil || !ok || len(rs) != 3 || rs[0].Inline {
			t.Fatalf("round %d: second reader %+v %v %v; want three request rows", round, rs, ok, err)
		}
		if _, ok, err := d.LockFastAcquireMany(ctx, p("s3", driver.ModeWrite), names); err != nil || ok {
			t.Fatalf("round %d: a writer beside the readers got %v, %v", round, ok, err)
		}
		release("s1", 3)
		release("s2", 3)
	}
}
