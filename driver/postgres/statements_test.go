package postgres

import (
	"context"
	"errors"
	"strings"
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
	ctx, _, d := migrated(t)
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
	var inc int64
	if err := d.SQL.QueryRowContext(ctx, `SELECT id FROM baton_incarnation`).Scan(&inc); err != nil {
		t.Fatal(err)
	}
	var last row
	for i, mode := range []driver.LockMode{driver.ModeWrite, driver.ModeWrite, driver.ModeRead} {
		existing := d.seen.Has(id)
		if existing != (i > 0) {
			t.Fatalf("acquire %d: the identifier seen %v", i, existing)
		}
		p := driver.FastAcquireParams{SessionID: "s1", ClientID: "c1", Ident: id, Mode: mode, CallID: int64(10 + i), Incarnation: inc}
		if existing {
			// The update returns the incarnation from the row (migration
			// 036); a row made by a statement that left it unset has it
			// set on its first update (ident_incarnation). A session of
			// another incarnation is told the server restarted.
			if i == 1 {
				if _, err := d.SQL.ExecContext(ctx, `UPDATE baton_lock_idents SET inc = NULL WHERE kind = 1 AND ns = 'x' AND name = 'e'`); err != nil {
					t.Fatal(err)
				}
			}
			stale := p
			stale.Incarnation = inc + 1
			if _, _, err := d.LockFastAcquire(ctx, stale); !errors.Is(err, driver.ErrServerRestarted) {
				t.Fatalf("acquire %d by a session of another incarnation: %v, want ErrServerRestarted", i, err)
			}
			if _, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: 1, NS: "x", Name: "e", InlineOnly: true}); err != nil {
				t.Fatal(err)
			}
			var rowInc int64
			if err := d.SQL.QueryRowContext(ctx, `SELECT inc, fence FROM baton_lock_idents WHERE kind = 1 AND ns = 'x' AND name = 'e'`).Scan(&rowInc, &last.fence); err != nil || rowInc != inc {
				t.Fatalf("acquire %d: the row's incarnation %d (%v), want %d", i, rowInc, err, inc)
			}
		}
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
	// The upkeep deletes the free row (here at once; ident_purge_idle
	// waits until its fence is a second behind the clock): the update
	// finds nothing, and the upsert after it makes the row again, its
	// fence from the clock.
	if _, err := d.SQL.ExecContext(ctx, `DELETE FROM baton_lock_idents WHERE kind = 1 AND ns = 'x' AND name = 'e' AND h_id IS NULL`); err != nil {
		t.Fatal(err)
	}
	r, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: "s1", ClientID: "c1", Ident: id, Mode: driver.ModeWrite, CallID: 20})
	if err != nil || !ok || r.Token <= last.fence || read().token != r.Token {
		t.Fatalf("acquire after the row was deleted: %+v %v %v; want a token above %d", r, ok, err, last.fence)
	}
}

// TestJoinedReaders: a reader that joined other readers marks the
// identifier, and the next reader of the driver goes straight to
// fast_acquire_shared; that statement still refuses it beside a writer,
// whatever the mark says, and a reader that finds itself alone there
// unmarks the identifier, so that the one after it is an inline holder
// again.
func TestJoinedReaders(t *testing.T) {
	ctx, _, d := migrated(t)
	id := driver.Ident{Kind: 1, NS: "x", Name: "j"}
	acquire := func(sess string, mode driver.LockMode) (driver.Request, bool) {
		t.Helper()
		r, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: sess, ClientID: "c1", Ident: id, Mode: mode, CallID: 40})
		if err != nil {
			t.Fatalf("%s's %s: %v", sess, mode, err)
		}
		return r, ok
	}
	release := func(sess string) {
		t.Helper()
		if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: sess, Kind: 1, NS: "x", Name: "j"}); err != nil || n != 1 {
			t.Fatalf("release by %s: %d, %v", sess, n, err)
		}
	}
	for _, sess := range []string{"r1", "r2", "r3"} {
		if r, ok := acquire(sess, driver.ModeRead); !ok || r.Inline != (sess == "r1") {
			t.Fatalf("reader %s: %+v, %v; want granted, inline only for the first", sess, r, ok)
		}
	}
	if !d.joined.Has(id) {
		t.Fatal("readers beside readers left the identifier unmarked")
	}
	for _, sess := range []string{"r1", "r2", "r3"} {
		release(sess)
	}
	if _, ok := acquire("w", driver.ModeWrite); !ok {
		t.Fatal("the writer was refused on a free lock")
	}
	if r, ok := acquire("r4", driver.ModeRead); ok {
		t.Fatalf("a reader of a marked identifier was granted beside a writer: %+v", r)
	}
	if d.joined.Has(id) {
		t.Fatal("a refused reader left the identifier marked")
	}
	release("w")
	// Marked again, then a reader alone: it unmarks.
	d.joined.Add(id)
	if r, ok := acquire("r5", driver.ModeRead); !ok || r.Inline {
		t.Fatalf("a marked identifier's lone reader: %+v, %v; want a request row", r, ok)
	}
	if d.joined.Has(id) {
		t.Fatal("a reader alone left the identifier marked")
	}
	release("r5")
	if r, ok := acquire("r6", driver.ModeRead); !ok || !r.Inline {
		t.Fatalf("the reader after it: %+v, %v; want an inline holder", r, ok)
	}
	release("r6")
}

// TestTurnstileAcquireTakesOnce: query turnstile_acquire takes the
// turnstile once (a session-level advisory lock taken twice would need
// two unlocks, and the release's one would leave it held), both when it
// is free and after a wait, leaves the line's own lock_timeout as it was,
// puts it back before its upsert (which may wait for the lock row longer
// than the turnstile's wait), and gives up a wait that runs out with
// lock_not_available.
func TestTurnstileAcquireTakesOnce(t *testing.T) {
	ctx, dsn, d := migrated(t)
	line, other := pgxConn(t, dsn), pgxConn(t, dsn)
	if _, err := line.Exec(ctx, "SET lock_timeout = '7s'"); err != nil {
		t.Fatal(err)
	}
	key := d.turnstileKey(driver.Ident{Kind: 1, NS: "x", Name: "t"})
	advisory := func(c *pgx.Conn, fn string) (ok bool) {
		t.Helper()
		if err := c.QueryRow(ctx, "SELECT "+fn+"($1, $2)::text <> 'false'", TurnstileClass, key).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	// take runs the statement and checks its answer, then how many times
	// the line holds the turnstile (unlocking it) and its lock_timeout,
	// and releases a lock it granted.
	take := func(label string, waitMS int32, granted, held, waited bool, holds int) {
		t.Helper()
		var hid, token, inc *int64
		var gotHeld, gotWaited bool
		err := line.QueryRow(ctx, d.Q("turnstile_acquire"), int16(1), []byte("x"), []byte("t"), TurnstileClass, key, waitMS,
			"s1", "c1", int64(1)).Scan(&hid, &token, &inc, &gotHeld, &gotWaited)
		if err != nil || (hid != nil) != granted || gotHeld != held || gotWaited != waited {
			t.Fatalf("%s: granted %v, held %v, waited %v, %v; want %v, %v, %v", label, hid != nil, gotHeld, gotWaited, err, granted, held, waited)
		}
		n := 0
		for advisory(line, "pg_advisory_unlock") {
			n++
		}
		var timeout string
		if err := line.QueryRow(ctx, "SHOW lock_timeout").Scan(&timeout); err != nil || n != holds || timeout != "7s" {
			t.Fatalf("%s: the turnstile held %d times, lock_timeout %s (%v); want %d, 7s", label, n, timeout, err, holds)
		}
		if granted {
			if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: 1, NS: "x", Name: "t", InlineOnly: true}); err != nil || n != 1 {
				t.Fatalf("%s: release %d, %v", label, n, err)
			}
		}
	}
	// letGo lets the other connection's turnstile go after a while, then
	// runs then; the channel closes when both are done (the connection
	// is not for two goroutines at once).
	letGo := func(after time.Duration, then func()) chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(after)
			_, _ = other.Exec(context.Background(), "SELECT pg_advisory_unlock($1, $2)", TurnstileClass, key)
			then()
		}()
		return done
	}
	take("free", 100, true, true, false, 1)
	advisory(other, "pg_advisory_lock")
	done := letGo(50*time.Millisecond, func() {})
	take("after a wait", 5000, true, true, true, 1)
	<-done
	// After a wait of at most 100 ms the upsert waits 300 ms for the
	// lock row, which a transaction of the test holds: the wait's
	// lock_timeout must be put back before it.
	advisory(other, "pg_advisory_lock")
	tx, err := d.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "SELECT 1 FROM baton_lock_idents WHERE kind = 1 AND ns = 'x' AND name = 't' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	done = letGo(30*time.Millisecond, func() {
		time.Sleep(300 * time.Millisecond)
		_ = tx.Commit()
	})
	take("a wait, then the row held 300 ms", 100, true, true, true, 1)
	<-done
	// Held for good: a try takes nothing; a wait runs out.
	advisory(other, "pg_advisory_lock")
	take("a try on a held turnstile", 0, false, false, true, 0)
	var hid, token, inc *int64
	var held, waited bool
	if err := line.QueryRow(ctx, d.Q("turnstile_acquire"), int16(1), []byte("x"), []byte("t"), TurnstileClass, key, int32(30),
		"s1", "c1", int64(1)).Scan(&hid, &token, &inc, &held, &waited); !lockTimedOut(err) {
		t.Fatalf("a wait on a held turnstile: %v, want lock_not_available", err)
	}
}

// pgxConn opens a connection of the test's own, closed when it ends.
func pgxConn(t testing.TB, dsn string) *pgx.Conn {
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
	ctx, _, d := migrated(t)
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
		if got := d.seen.HasAll(1, "m", names); got != seen {
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

// migrated opens a driver on a new, migrated schema (skipping when the
// test backends leave PostgreSQL out), with a context for the test.
func migrated(t testing.TB) (context.Context, string, *Driver) {
	t.Helper()
	dsn := batontest.NewDSN(t, "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, dsn, batontest.Migrated(t, dsn).(*Driver)
}

// TestReleaseInlineNameByKey: the release of one name finds its lock row
// by the primary key in the statement's generic plan too (the plan a
// prepared statement keeps), with 20,000 lock rows in the table.
func TestReleaseInlineNameByKey(t *testing.T) {
	ctx, dsn, d := migrated(t)
	if _, err := d.SQL.ExecContext(ctx, `INSERT INTO baton_lock_idents (kind, ns, name, fence, n_r, n_w, n_p)
		SELECT 1, 'big'::bytea, ('n' || g)::bytea, 1, 0, 0, 0 FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SQL.ExecContext(ctx, "ANALYZE baton_lock_idents"); err != nil {
		t.Fatal(err)
	}
	c := pgxConn(t, dsn)
	for _, q := range []string{"SET plan_cache_mode = force_generic_plan",
		"PREPARE rel(text, smallint, bytea, bytea, text) AS " + d.Q("release_inline_name")} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := c.Query(ctx, "EXPLAIN EXECUTE rel('s1', 1, 'big', 'n5', 'baton_wake')", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(batontest.ScanStrings(t, rows), "\n")
	if !strings.Contains(text, "Index Scan") || strings.Contains(text, "Seq Scan") {
		t.Fatalf("release_inline_name's generic plan does not find the row by its key:\n%s", text)
	}
}
