package mysql

import (
	"context"
	"database/sql"
	sqldrv "database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

// TestReleaseLocksOnlyItsRows: a release through InnoDB locks its own
// session's request rows only, even when the table's statistics are at
// their worst: a handful of live rows beside many deleted ones that purge
// has not removed yet (a transaction with an older snapshot holds them),
// the state in which MariaDB read lock_requests whole in id order and
// locked every row it passed (sql/locks.sql, release_list_ns). Another
// transaction holds the oldest and the newest reader's request rows
// locked; the other readers' releases, by name and by namespace, must
// not wait for them.
func TestReleaseLocksOnlyItsRows(t *testing.T) {
	ctx, d := freshDriver(t)
	worstStatistics(t, d, "baton_lock_requests", `INSERT INTO baton_lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at)
		WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 400)
		SELECT CONCAT('s', 1 + n % 4), 'c', 0, 'ns', 'n', 'R', 'G', 1, 1, 1 FROM s`)

	id := driver.Ident{Kind: driver.KindService, NS: "ns", Name: "n"}
	var held []driver.Request
	for _, s := range []string{"s1", "s2", "s3", "s4"} {
		held = append(held, grantedFast(t, d, s, id, driver.ModeRead))
	}
	var rows int
	if err := d.SQL.QueryRow("SELECT COUNT(*) FROM baton_lock_requests WHERE session_id IN ('s1', 's2', 's3', 's4')").Scan(&rows); err != nil || rows != 4 {
		t.Fatalf("%d request rows, %v; want the four readers' (the first adopted)", rows, err)
	}

	// s1's and s4's request rows locked, as a release or a grant in flight
	// locks them.
	other, err := d.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback() }()
	for _, r := range []driver.Request{held[0], held[3]} {
		var locked int64
		if err := other.QueryRowContext(ctx, "SELECT id FROM baton_lock_requests WHERE id = ? FOR UPDATE", r.ID).Scan(&locked); err != nil {
			t.Fatal(err)
		}
	}

	for _, p := range []driver.FastReleaseParams{
		{SessionID: "s2", Kind: id.Kind, NS: id.NS, Name: id.Name, Limit: 1},
		{SessionID: "s3", Kind: id.Kind, NS: id.NS},
	} {
		notWaiting(t, other, "the release of "+p.SessionID, func() error {
			n, _, err := d.LockFastRelease(ctx, p)
			if err == nil && n != 1 {
				t.Errorf("%s released %d, want 1", p.SessionID, n)
			}
			return err
		})
	}
}

// lockMutex locks the mutex row of ns/name in a transaction of its own,
// as a slow-path call in flight does, and returns the transaction; the
// test's end rolls it back if the test did not.
func lockMutex(t *testing.T, ctx context.Context, d *Driver, ns, name string) *sql.Tx {
	t.Helper()
	other, err := d.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Rollback() })
	var gated int64
	if err := other.QueryRowContext(ctx, "SELECT gated FROM baton_lock_mutex WHERE ns = ? AND name = ? FOR UPDATE", ns, name).Scan(&gated); err != nil {
		t.Fatal(err)
	}
	return other
}

// notWaiting runs fn, which must end while the transaction other still
// holds its locks: after 15 s other is rolled back (which lets fn end)
// and the test fails.
func notWaiting(t *testing.T, other *sql.Tx, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(15 * time.Second):
		_ = other.Rollback()
		<-done
		t.Fatalf("%s waited for another transaction's row lock", what)
	}
}

// grantedSlow takes id for sess in mode through the slow path's call
// ({p}request_commit, incarnation 0: no session row needed, as
// TestRequestCommitsInCall), which must grant it.
func grantedSlow(t *testing.T, d *Driver, sess string, id driver.Ident, mode driver.LockMode) driver.Request {
	t.Helper()
	r, err := d.request(context.Background(), driver.RequestParams{SessionID: sess, ClientID: "c", Ident: id, Mode: mode, CallID: 1}, 0)
	if err != nil || r.Status != driver.StatusGranted {
		t.Fatalf("%s on %v: %+v %v; want it granted", sess, id, r, err)
	}
	return r
}

// grantedFast takes id for sess in mode through the fast path, which must
// grant it.
func grantedFast(t *testing.T, d *Driver, sess string, id driver.Ident, mode driver.LockMode) driver.Request {
	t.Helper()
	r, ok, err := d.LockFastAcquire(context.Background(), driver.FastAcquireParams{SessionID: sess, ClientID: "c", Ident: id, Mode: mode, CallID: 1})
	if err != nil || !ok {
		t.Fatalf("%s on %v, fast: %v %v; want it granted", sess, id, ok, err)
	}
	return r
}

// fastSlow reads id's lock_fast.slow: 1 while the slow path owns it.
func fastSlow(t *testing.T, d *Driver, id driver.Ident) (slow int) {
	t.Helper()
	if err := d.SQL.QueryRow("SELECT slow FROM baton_lock_fast WHERE kind = ? AND ns = ? AND name = ?", id.Kind, []byte(id.NS), []byte(id.Name)).Scan(&slow); err != nil {
		t.Fatal(err)
	}
	return slow
}

// TestDemoteLocksOnlyFree: handing an identifier back to the fast path
// does not wait for its row lock while others still hold it (two
// readers, the row locked by another transaction as a grant or release
// in flight locks it), and still hands it back once the last holder
// has gone.
func TestDemoteLocksOnlyFree(t *testing.T) {
	ctx, d := freshDriver(t)
	id := driver.Ident{Kind: driver.KindService, NS: "ns", Name: "d"}
	for _, s := range []string{"s1", "s2"} {
		grantedFast(t, d, s, id, driver.ModeRead)
	}
	slow := func() int { return fastSlow(t, d, id) }
	if slow() != 1 {
		t.Fatal("two readers: the identifier is not the slow path's")
	}
	other := lockMutex(t, ctx, d, "ns", "d")
	notWaiting(t, other, "demote", func() error { _, err := d.demote(ctx, id); return err })
	if err := other.Rollback(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s2", "s1"} {
		if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: s, Kind: id.Kind, NS: id.NS, Name: id.Name}); err != nil || n != 1 {
			t.Fatalf("release %s: %d %v", s, n, err)
		}
	}
	if slow() != 0 {
		t.Fatal("free again, the identifier was not handed back to the fast path")
	}
}

// TestTxHoldsPurgeSkipsRunning: the upkeep's deletion of the holds of
// ended transactions does not wait for a running transaction's hold, with
// the table's statistics at their worst (TestReleaseLocksOnlyItsRows):
// "id IN (...)" read every row, and waited for the uncommitted one.
func TestTxHoldsPurgeSkipsRunning(t *testing.T) {
	ctx, d := freshDriver(t)
	worstStatistics(t, d, "baton_lock_txholds", `INSERT INTO baton_lock_txholds (kind, ns, name, mode, txn, host, pid, owner, since)
		WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 400)
		SELECT 0, 'ns', 'h', 'W', n, 'h', 1, 'o', 1 FROM s`)
	hold := func(q querier, name string) {
		t.Helper()
		if _, err := q.ExecContext(ctx, d.Q("tx_hold_insert"), 0, []byte("ns"), []byte(name), "W", "h", 1, "o"); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"e1", "e2", "e3"} {
		hold(d.SQL, n) // ended: committed
	}
	running, err := d.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = running.Rollback() }()
	hold(running, "r")
	notWaiting(t, running, "the deletion of ended holds", func() error { return d.deleteEnded(ctx) })
	var left int
	if err := d.SQL.QueryRow("SELECT COUNT(*) FROM baton_lock_txholds").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d committed holds left, %v; want 0", left, err)
	}
}

// worstStatistics leaves table with the statistics of an empty table
// (kept: the lock tables hold a handful of rows at any moment, and the
// bench's had these) and its indexes full of deleted entries that purge
// may not remove until the test ends (a consistent snapshot is held
// open): the rows churn inserts, deleted.
func worstStatistics(t *testing.T, d *Driver, table, churn string) {
	t.Helper()
	ctx := context.Background()
	exec := func(q querier, query string) {
		t.Helper()
		if _, err := q.ExecContext(ctx, query); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	exec(d.SQL, "ALTER TABLE "+table+" STATS_AUTO_RECALC = 0")
	exec(d.SQL, "ANALYZE TABLE "+table)
	snap, err := d.SQL.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = snap.ExecContext(ctx, "ROLLBACK")
		_ = snap.Raw(func(any) error { return sqldrv.ErrBadConn }) // not back to the pool
		_ = snap.Close()
	})
	exec(snap, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
	exec(snap, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
	exec(snap, "SELECT COUNT(*) FROM "+table)
	exec(d.SQL, churn)
	exec(d.SQL, "DELETE FROM "+table)
}

// TestRequestCommitsInCall: the slow path's request call ends holding no
// row lock: right after it, on a connection whose
// transaction is still open, another transaction takes the identifier's
// row lock without waiting.
func TestRequestCommitsInCall(t *testing.T) {
	ctx, d := freshDriver(t)
	id := driver.Ident{Kind: driver.KindService, NS: "ns", Name: "c"}
	grantedFast(t, d, "s1", id, driver.ModeRead)
	c, err := d.SQL.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = c.ExecContext(ctx, "ROLLBACK")
		_ = c.Close()
	}()
	if _, err := c.ExecContext(ctx, "START TRANSACTION"); err != nil {
		t.Fatal(err)
	}
	var status string
	var rid, token, holder int64
	if err := c.QueryRowContext(ctx, d.Q("request_call"), id.Kind, []byte(id.NS), []byte(id.Name), "s2", "c", "R", 2, true, 0).
		Scan(&status, &rid, &token, &holder); err != nil || status != "G" {
		t.Fatalf("request: %q, %v; want G", status, err)
	}
	var fence int64
	if err := d.SQL.QueryRowContext(ctx, "SELECT gated FROM baton_lock_mutex WHERE ns = 'ns' AND name = 'c' FOR UPDATE NOWAIT").Scan(&fence); err != nil {
		t.Fatalf("the identifier's row after the call: %v; want it free", err)
	}
}

// TestTurnstileReleaseNamespace: a namespace's release by a session whose
// line holds one turnstile there lets it go in the release's own call on
// the line (one procedure call, no RELEASE_LOCK statement
// after it); with two turnstiles there both are let go after the
// release, as before.
func TestTurnstileReleaseNamespace(t *testing.T) {
	ctx, d := freshDriver(t)
	take := func(name string) driver.Ident {
		t.Helper()
		id := driver.Ident{Kind: driver.KindService, NS: "tn", Name: name}
		_, ok, _, lined, err := d.LockTurnstileAcquire(ctx, driver.FastAcquireParams{SessionID: "s1", ClientID: "c", Ident: id, Mode: driver.ModeWrite, CallID: 1}, time.Second)
		if err != nil || !ok || !lined {
			t.Fatalf("turnstile and lock %s: %v %v %v", name, ok, lined, err)
		}
		return id
	}
	free := func(id driver.Ident) bool {
		t.Helper()
		var f int
		if err := d.SQL.QueryRow("SELECT IS_FREE_LOCK(?)", d.turnstileName(id)).Scan(&f); err != nil {
			t.Fatal(err)
		}
		return f == 1
	}
	lineStatus := func() (calls, dos int) {
		t.Helper()
		l := d.lines.Find("s1")
		l.Lock()
		defer l.Unlock()
		for _, v := range []struct {
			name string
			n    *int
		}{{"Com_call_procedure", &calls}, {"Com_do", &dos}} {
			var name string
			if err := l.Conn.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE '"+v.name+"'").Scan(&name, v.n); err != nil {
				t.Fatal(err)
			}
		}
		return calls, dos
	}
	release := func(want int) {
		t.Helper()
		if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: driver.KindService, NS: "tn", InlineOnly: true}); err != nil || n != want {
			t.Fatalf("release: %d, %v; want %d", n, err, want)
		}
	}

	a := take("a")
	calls0, dos0 := lineStatus()
	release(1)
	calls1, dos1 := lineStatus()
	// One call, and no DO RELEASE_LOCK after it: the one DO is the
	// procedure's own (DO LAST_INSERT_ID(0)).
	if !free(a) || calls1-calls0 != 1 || dos1-dos0 != 1 {
		t.Fatalf("one turnstile: free %v, %d calls and %d DO on the line; want free, 1 and 1", free(a), calls1-calls0, dos1-dos0)
	}

	a, b := take("a"), take("b")
	release(2)
	if !free(a) || !free(b) {
		t.Fatalf("two turnstiles: free %v %v; want both", free(a), free(b))
	}
	if _, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: "s2", ClientID: "c", Ident: a, Mode: driver.ModeWrite, CallID: 2}); err != nil || !ok {
		t.Fatalf("after the release another session's fast acquire: %v, %v; want granted", ok, err)
	}
}

// TestReleaseCallHandsOn: the release of a lock others wait for, by name
// and by namespace, goes through {p}release_commit: the
// waiters are granted in the release's call, front to back by lockcore's
// rule (a writer behind a writer, then two readers together), the
// identifier's row is free once the call has returned, and a waiter whose
// client listens in another process is woken after the commit (its
// listener polls every 20 s: only the wake-up can reach it in time).
func TestReleaseCallHandsOn(t *testing.T) {
	ctx := context.Background()
	d1, d2 := twoProcesses(t)
	_, w := remoteListener(t, d1, "far", 20*time.Second)
	id := driver.Ident{Kind: driver.KindService, NS: "rc", Name: "n"}
	holder, ok, err := d2.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: "s1", ClientID: "near", Ident: id, Mode: driver.ModeWrite, CallID: 1})
	if err != nil || !ok {
		t.Fatalf("holder: %v %v", ok, err)
	}
	request := func(sess string, mode driver.LockMode) driver.Request {
		t.Helper()
		// Incarnation 0: no session rows needed (as TestRequestCommitsInCall).
		r, err := d1.request(ctx, driver.RequestParams{SessionID: sess, ClientID: "far", Ident: id, Mode: mode, CallID: 2}, 0)
		if err != nil || r.Status != driver.StatusPending {
			t.Fatalf("request of %s: %+v %v; want it pending", sess, r, err)
		}
		return r
	}
	writer := request("s2", driver.ModeWrite)
	r3, r4 := request("s3", driver.ModeRead), request("s4", driver.ModeRead)
	status := func(r driver.Request) (string, int64) {
		t.Helper()
		var st string
		var token int64
		if err := d2.SQL.QueryRow("SELECT status, token FROM baton_lock_requests WHERE id = ?", r.ID).Scan(&st, &token); err != nil {
			t.Fatal(err)
		}
		return st, token
	}
	rowFree := func(when string) {
		t.Helper()
		var fence int64
		if err := d2.SQL.QueryRow("SELECT gated FROM baton_lock_mutex WHERE ns = 'rc' AND name = 'n' FOR UPDATE NOWAIT").Scan(&fence); err != nil {
			t.Fatalf("the identifier's row after %s: %v; want it free", when, err)
		}
	}

	n := w.quiet()
	if got, _, err := d2.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: id.Kind, NS: id.NS, Name: id.Name}); err != nil || got != 1 {
		t.Fatalf("release by name: %d %v; want 1", got, err)
	}
	rowFree("the release by name")
	st, wtoken := status(writer)
	if st != "G" || wtoken <= holder.Token {
		t.Fatalf("the writer after the release: %s, token %d (holder's %d); want it granted with a later token", st, wtoken, holder.Token)
	}
	if st3, _ := status(r3); st3 != "P" {
		t.Fatalf("a reader behind the new writer: %s; want it still waiting", st3)
	}
	w.waitWake(t, n, 5*time.Second)

	n = w.quiet()
	if got, _, err := d1.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s2", Kind: id.Kind, NS: id.NS}); err != nil || got != 1 {
		t.Fatalf("release of the namespace: %d %v; want 1", got, err)
	}
	rowFree("the release of the namespace")
	st3, t3 := status(r3)
	st4, t4 := status(r4)
	if st3 != "G" || st4 != "G" || t3 <= wtoken || t4 != t3+1 {
		t.Fatalf("the readers: %s/%d and %s/%d after the writer's %d; want both granted, tokens in order", st3, t3, st4, t4, wtoken)
	}
	w.waitWake(t, n, 5*time.Second)
	var np, nr, nw int64
	if err := d2.SQL.QueryRow("SELECT n_p, n_r, n_w FROM baton_lock_idents WHERE ns = 'rc' AND name = 'n'").Scan(&np, &nr, &nw); err != nil || np != 0 || nr != 2 || nw != 0 {
		t.Fatalf("counters n_p %d n_r %d n_w %d, %v; want 0 2 0", np, nr, nw, err)
	}
}

// TestParseReleaseCall: release_call's JSON, whose integers MariaDB writes
// as numbers or (a procedure's variables) as strings; an identifier the
// call handed back to the fast path itself (free 2) is not the client's
// to hand back.
func TestParseReleaseCall(t *testing.T) {
	p := driver.FastReleaseParams{Kind: driver.KindService, NS: "ns"}
	out, err := parseReleaseCall(p, []byte(`[["61", 0, 0, 0, 1], ["62", 1, 0, -9007199254740993, 0], ["63", 1, 1, 0, "0"], ["64", 0, 0, 0, 2]]`),
		[]byte(`[["12", "s", "c", "9007199254740993", "7"], [13, "s2", "c2", 4, 8]]`))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := driver.Ident{Kind: p.Kind, NS: "ns", Name: "a"}, driver.Ident{Kind: p.Kind, NS: "ns", Name: "b"}, driver.Ident{Kind: p.Kind, NS: "ns", Name: "c"}
	if fmt.Sprint(out.waiting) != fmt.Sprint([]driver.Ident{b, c}) || fmt.Sprint(out.adopted) != "[0 -9007199254740993 0 0]" ||
		fmt.Sprint(out.free) != fmt.Sprint([]driver.Ident{a}) {
		t.Fatalf("identifiers: %+v", out)
	}
	if len(out.grants) != 2 || out.grants[0].CallID != 9007199254740993 || out.grants[0].ID != 12 || out.grants[1].Token != 8 ||
		out.grants[1].ClientID != "c2" || out.grants[0].Status != driver.StatusGranted {
		t.Fatalf("grants: %+v", out.grants)
	}
	for _, bad := range [][2]string{{`[["zz", 0, 0, 0, 0]]`, `[]`}, {`[["61", 0, 0, 0]]`, `[]`}, {`[]`, `[[1.5, "s", "c", 1, 1]]`}, {`{`, `[]`}} {
		if _, err := parseReleaseCall(p, []byte(bad[0]), []byte(bad[1])); err == nil {
			t.Errorf("parseReleaseCall(%s, %s): no error", bad[0], bad[1])
		}
	}
}

// TestFastConflictHeld: LockConflictHeld's first read answers from the
// fast holder's MEMORY row alone (the second reads both tables, and would
// hide a first read that never says yes).
func TestFastConflictHeld(t *testing.T) {
	ctx, d := freshDriver(t)
	fast := func(sess string, id driver.Ident, mode driver.LockMode) bool {
		t.Helper()
		var held bool
		if err := d.rowHot(ctx, "fast_conflict_held", id.Kind, bin(id.NS), bin(id.Name), sess, string(mode)).Scan(&held); err != nil {
			t.Fatal(err)
		}
		return held
	}
	w := driver.Ident{Kind: driver.KindService, NS: "ns", Name: "w"}
	r := driver.Ident{Kind: driver.KindService, NS: "ns", Name: "r"}
	for _, h := range []struct {
		id   driver.Ident
		mode driver.LockMode
	}{{w, driver.ModeWrite}, {r, driver.ModeRead}} {
		grantedFast(t, d, "s1", h.id, h.mode)
	}
	for _, c := range []struct {
		sess string
		id   driver.Ident
		mode driver.LockMode
		want bool
	}{
		{"s2", w, driver.ModeRead, true},
		{"s2", w, driver.ModeWrite, true},
		{"s1", w, driver.ModeWrite, false}, // its own
		{"s2", r, driver.ModeRead, false},  // readers share
		{"s2", r, driver.ModeWrite, true},
		{"s2", driver.Ident{Kind: driver.KindService, NS: "ns", Name: "free"}, driver.ModeWrite, false},
	} {
		if got := fast(c.sess, c.id, c.mode); got != c.want {
			t.Errorf("fast_conflict_held(%s, %v, %s) = %v, want %v", c.sess, c.id, c.mode, got, c.want)
		}
	}
}

// TestReleaseCallCounts: {p}release_commit releases every
// instance of the session in its scope, re-entered ones and readers
// beside writers included, name by name, counts them, and leaves each
// identifier's counters as its remaining instances make them; a release
// by name leaves the session's other names alone.
func TestReleaseCallCounts(t *testing.T) {
	ctx, d := freshDriver(t)
	take := func(sess, name string, mode driver.LockMode) {
		t.Helper()
		grantedSlow(t, d, sess, driver.Ident{Kind: driver.KindService, NS: "cnt", Name: name}, mode)
	}
	counters := func(name string) string {
		t.Helper()
		var nr, nw, np int64
		if err := d.SQL.QueryRow("SELECT n_r, n_w, n_p FROM baton_lock_idents WHERE ns = 'cnt' AND name = ?", name).Scan(&nr, &nw, &np); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d/%d/%d", nr, nw, np)
	}
	rows := func(sess string) (n int) {
		t.Helper()
		if err := d.SQL.QueryRow("SELECT COUNT(*) FROM baton_lock_requests WHERE session_id = ?", sess).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	take("s1", "a", driver.ModeWrite)
	take("s1", "a", driver.ModeWrite)
	take("s1", "a", driver.ModeRead)
	take("s1", "b", driver.ModeRead)
	take("s2", "b", driver.ModeRead)
	take("s1", "c", driver.ModeWrite)
	take("s2", "d", driver.ModeWrite)
	if n, _, err := d.releaseSlow(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: driver.KindService, NS: "cnt"}, 0); err != nil || n != 5 {
		t.Fatalf("s1's release of the namespace: %d %v; want 5", n, err)
	}
	for name, want := range map[string]string{"a": "0/0/0", "b": "1/0/0", "c": "0/0/0", "d": "0/1/0"} {
		if got := counters(name); got != want {
			t.Errorf("%s's counters (readers/writers/waiting) after s1's release: %s, want %s", name, got, want)
		}
	}
	if n := rows("s1"); n != 0 {
		t.Fatalf("s1 has %d rows left", n)
	}

	// s2's two names, one by one.
	if n, _, err := d.releaseSlow(ctx, driver.FastReleaseParams{SessionID: "s2", Kind: driver.KindService, NS: "cnt", Name: "d"}, 0); err != nil || n != 1 {
		t.Fatalf("s2's release of d: %d %v; want 1", n, err)
	}
	if got := counters("d"); got != "0/0/0" || rows("s2") != 1 {
		t.Fatalf("after s2's release of d: counters %s, s2's rows %d; want 0/0/0 and b's one row", got, rows("s2"))
	}
	if n, _, err := d.releaseSlow(ctx, driver.FastReleaseParams{SessionID: "s2", Kind: driver.KindService, NS: "cnt", Name: "b"}, 0); err != nil || n != 1 {
		t.Fatalf("s2's release of b: %d %v; want 1", n, err)
	}
	if got := counters("b"); got != "0/0/0" || rows("s2") != 0 {
		t.Fatalf("after s2's release of b: counters %s, rows %d; want none", got, rows("s2"))
	}
}

// TestReleaseInstancesAdopts: the releases that had stayed the client's
// transaction are one call of {p}release_instances: a
// release that must first adopt the session's fast holder (the slow path
// took the identifier over and nothing adopted the holder yet:
// fast_release_*'s signal 3), by namespace and with a limit, and a
// release of the newest instance of a re-entered lock. Each leaves the
// counters as the remaining instances make them, counts an instance
// adopted already once, hands the lock on only when its last instance
// goes, and clears the released holder's fast row (a fast acquire of
// another session succeeds once the identifier is free). The previous
// version's {p}release_commit still releases.
func TestReleaseInstancesAdopts(t *testing.T) {
	ctx, d := freshDriver(t)
	ident := func(name string) driver.Ident { return driver.Ident{Kind: driver.KindService, NS: "ad", Name: name} }
	fast := func(sess, name string) driver.Request { return grantedFast(t, d, sess, ident(name), driver.ModeWrite) }
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := d.SQL.ExecContext(ctx, query, args...); err != nil {
			t.Fatal(err)
		}
	}
	// taken: the slow path took name over (fast_engage) and nothing
	// adopted its holder: a request or release whose transaction rolled
	// back leaves this (the MEMORY row's change stays).
	taken := func(name string) { exec("UPDATE baton_lock_fast SET slow = 1 WHERE ns = 'ad' AND name = ?", name) }
	release := func(sess, name string, limit int) int {
		t.Helper()
		n, left, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: sess, Kind: driver.KindService, NS: "ad", Name: name, Limit: limit})
		if err != nil || len(left) != 0 {
			t.Fatalf("%s's release of %q (limit %d): %d %v %v", sess, name, limit, n, left, err)
		}
		return n
	}
	state := func(name string) string {
		t.Helper()
		var nr, nw, np int64
		err := d.SQL.QueryRow("SELECT n_r, n_w, n_p FROM baton_lock_idents WHERE ns = 'ad' AND name = ?", name).Scan(&nr, &nw, &np)
		if errors.Is(err, sql.ErrNoRows) {
			return "no row"
		} else if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		rows, err := d.SQL.Query("SELECT id FROM baton_lock_requests WHERE ns = 'ad' AND name = ? ORDER BY id", name)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		var holder sql.NullString
		if err := d.SQL.QueryRow("SELECT h_session FROM baton_lock_fast WHERE ns = 'ad' AND name = ?", name).Scan(&holder); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d/%d/%d rows %v fast holder %q", nr, nw, np, ids, holder.String)
	}
	free := func(name string, after driver.Request) {
		t.Helper()
		r := fast("s9", name)
		if r.Token <= after.Token {
			t.Fatalf("%s's token after the release: %d, not past %d", name, r.Token, after.Token)
		}
		if n := release("s9", name, 0); n != 1 {
			t.Fatalf("s9's release of %s: %d", name, n)
		}
	}

	// A holder not adopted yet, released by namespace and with a limit.
	a, b := fast("s1", "a"), fast("s2", "b")
	taken("a")
	taken("b")
	if n := release("s1", "", 0); n != 1 {
		t.Fatalf("s1's release of the namespace after the take-over: %d, want 1 (its adopted holder)", n)
	}
	if got := state("a"); got != `0/0/0 rows [] fast holder ""` {
		t.Fatalf("a after s1's release: %s", got)
	}
	free("a", a)
	if n := release("s2", "b", 1); n != 1 {
		t.Fatalf("s2's release of one instance of b after the take-over: %d, want 1", n)
	}
	if got := state("b"); got != `0/0/0 rows [] fast holder ""` {
		t.Fatalf("b after s2's release: %s", got)
	}
	free("b", b)

	// A lock entered three times: the fast holder adopted by the second
	// request, and its mark not set (its fast row keeps h_id: signal 3
	// again, as when fast_adopted fails), first with nobody waiting (the
	// counters are not counted again from the rows), then with a waiter
	// of another session.
	c := fast("s1", "c")
	enter := func(sess string, call int64) driver.Request {
		t.Helper()
		r, err := d.request(ctx, driver.RequestParams{SessionID: sess, ClientID: "c", Ident: ident("c"), Mode: driver.ModeWrite, CallID: call}, 0)
		if err != nil {
			t.Fatalf("%s's request of c: %v", sess, err)
		}
		return r
	}
	unmarked := func() { exec("UPDATE baton_lock_fast SET h_id = ? WHERE ns = 'ad' AND name = 'c'", c.ID) }
	second, third := enter("s1", 2), enter("s1", 3)
	if second.Status != driver.StatusGranted || third.Status != driver.StatusGranted || third.ID <= second.ID {
		t.Fatalf("s1's second and third instances of c: %+v %+v", second, third)
	}
	unmarked()
	wantAfter := func(what, want string) {
		t.Helper()
		if n := release("s1", "c", 1); n != 1 {
			t.Fatalf("s1's release of one instance of c %s: %d, want 1", what, n)
		}
		if got := state("c"); got != want {
			t.Fatalf("c after s1's release %s: %s, want %s", what, got, want)
		}
	}
	wantAfter("of three", fmt.Sprintf(`0/2/0 rows [%d %d] fast holder "s1"`, c.ID, second.ID))
	waiter := enter("s2", 4)
	if waiter.Status != driver.StatusPending {
		t.Fatalf("s2's request of c: %+v; want it waiting", waiter)
	}
	unmarked()
	wantAfter("of two", fmt.Sprintf(`0/1/1 rows [%d %d] fast holder "s1"`, c.ID, waiter.ID))
	// The hand-on after the last must not adopt the holder the call has
	// just released.
	unmarked()
	wantAfter("of the last", fmt.Sprintf(`0/1/0 rows [%d] fast holder ""`, waiter.ID))

	// The previous version's call.
	var n int
	var idents, grants string
	if err := d.SQL.QueryRow("CALL baton_release_commit('s2', ?, 'ad', 'c', 0)", driver.KindService).Scan(&n, &idents, &grants); err != nil || n != 1 {
		t.Fatalf("release_commit: %d %v", n, err)
	}
	if got := state("c"); got != `0/0/0 rows [] fast holder ""` {
		t.Fatalf("c after s2's release_commit: %s", got)
	}
}

// TestReleaseHandsBackFree: {p}release_instances hands
// each identifier its release left free back to the fast path after its
// commit, in the same call (the flag 2 says so, and the client does not
// do it again), with the fence carried over so that the next fast grant's
// token is later; one another session still holds stays the slow path's.
func TestReleaseHandsBackFree(t *testing.T) {
	ctx, d := freshDriver(t)
	ident := func(name string) driver.Ident { return driver.Ident{Kind: driver.KindService, NS: "hb", Name: name} }
	take := func(sess, name string, mode driver.LockMode) driver.Request {
		t.Helper()
		return grantedSlow(t, d, sess, ident(name), mode)
	}
	slow := func(name string) int { return fastSlow(t, d, ident(name)) }
	x := take("s1", "x", driver.ModeWrite)
	take("s1", "z", driver.ModeRead)
	take("s2", "z", driver.ModeRead)
	if slow("x") != 1 || slow("z") != 1 {
		t.Fatal("the slow path's requests left the identifiers to the fast path")
	}
	var n int
	var idents, grants string
	if err := d.SQL.QueryRow("CALL baton_release_instances('s1', ?, 'hb', NULL, 0, 0)", driver.KindService).Scan(&n, &idents, &grants); err != nil || n != 2 {
		t.Fatalf("s1's release of the namespace: %d %v; want 2", n, err)
	}
	out, err := parseReleaseCall(driver.FastReleaseParams{Kind: driver.KindService, NS: "hb"}, []byte(idents), []byte(grants))
	if err != nil {
		t.Fatal(err)
	}
	if strings.ReplaceAll(idents, " ", "") != `[["78",0,0,0,2],["7A",0,0,0,0]]` || len(out.free) != 0 {
		t.Fatalf("identifiers %s (left free for the client: %v); want x handed back by the call, z still held", idents, out.free)
	}
	if slow("x") != 0 || slow("z") != 1 {
		t.Fatalf("after the release: x slow=%d, z slow=%d; want x the fast path's again, z still the slow path's", slow("x"), slow("z"))
	}
	r, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: "s3", ClientID: "c", Ident: ident("x"), Mode: driver.ModeWrite, CallID: 2})
	if err != nil || !ok || r.Token <= x.Token {
		t.Fatalf("a fast acquire of x after the release: %+v %v %v; want it granted with a token past %d", r, ok, err, x.Token)
	}
}

// TestDemoteFreeReadsFastRow: the read that decides whether a hand-back
// to the fast path is worth its locking transaction (fast_demote_free)
// says yes only when fast_demote could change the fast row: the slow
// path owns the identifier and no fast holder is left. A session's
// re-entry, refused by its own fast holder, used to run the transaction
// for nothing on every call.
func TestDemoteFreeReadsFastRow(t *testing.T) {
	ctx, d := freshDriver(t)
	id := driver.Ident{Kind: driver.KindService, NS: "df", Name: "n"}
	free := func(when string, want int) {
		t.Helper()
		var n int
		if err := d.SQL.QueryRow(d.Q("fast_demote_free"), id.Kind, bin(id.NS), bin(id.Name)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Fatalf("fast_demote_free %s: %d, want %d", when, n, want)
		}
	}
	// The slow path's grant, released: the identifier's row all zeros,
	// the slow path's with no holder (until the release hands it back).
	r := grantedSlow(t, d, "s1", id, driver.ModeWrite)
	free("while s1 holds through InnoDB", 0)
	if _, err := d.SQL.Exec("DELETE FROM baton_lock_requests WHERE id = ?", r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SQL.Exec("UPDATE baton_lock_idents SET n_w = 0 WHERE ns = 'df'"); err != nil {
		t.Fatal(err)
	}
	free("with nothing left in InnoDB and the slow path's row", 1)
	if demoted, err := d.demote(ctx, id); err != nil || !demoted {
		t.Fatalf("demote: %v %v; want it handed back", demoted, err)
	}
	free("once the fast path owns it", 0)
	if _, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: "s1", ClientID: "c", Ident: id, Mode: driver.ModeWrite, CallID: 2}); err != nil || !ok {
		t.Fatalf("s1's fast acquire: %v %v", ok, err)
	}
	free("while s1 holds it on the fast path", 0)
	if demoted, err := d.demote(ctx, id); err != nil || demoted {
		t.Fatalf("demote of a fast-held identifier: %v %v; want nothing done", demoted, err)
	}
}
