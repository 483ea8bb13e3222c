package mysql

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

// TestSlowPathWritesNoInnoDB: a slow-path call keeps
// its lock state in MEMORY tables and only locks the identifier's mutex
// row in InnoDB, so its transaction modifies no InnoDB row (and so writes
// no redo to flush at its commit). A waiter's request and the hand-on to
// it, run in one transaction on rows made by an earlier call, leave
// INNODB_TRX's trx_rows_modified at 0 while the state changes, and hold
// the mutex row against another transaction until the commit.
func TestSlowPathWritesNoInnoDB(t *testing.T) {
	ctx, d := freshDriver(t)
	id := driver.Ident{Kind: driver.KindService, NS: "mem", Name: "n"}
	for _, table := range []string{"lock_idents", "lock_requests"} {
		var engine string
		if err := d.SQL.QueryRow("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
			"baton_"+table).Scan(&engine); err != nil || engine != "MEMORY" {
			t.Fatalf("%s's engine: %q, %v; want MEMORY", table, engine, err)
		}
	}
	holder := grantedSlow(t, d, "s1", id, driver.ModeWrite) // makes the identifier's rows
	c := conn(t, d.SQL)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := c.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	modified := func(when string) {
		t.Helper()
		var n int64
		switch err := c.QueryRowContext(ctx, "SELECT trx_rows_modified FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID()").Scan(&n); {
		case err != nil && err != sql.ErrNoRows:
			t.Fatal(err)
		case n != 0:
			t.Fatalf("%s: the transaction modified %d InnoDB rows; want none", when, n)
		}
	}
	status := func(rid int64) string {
		t.Helper()
		var st string
		if err := c.QueryRowContext(ctx, "SELECT status FROM baton_lock_requests WHERE id = ?", rid).Scan(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	mutexBusy := func() bool {
		t.Helper()
		other, err := d.SQL.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = other.Rollback() }()
		var gated int
		err = other.QueryRowContext(ctx, "SELECT gated FROM baton_lock_mutex WHERE kind = ? AND ns = 'mem' AND name = 'n' FOR UPDATE NOWAIT", id.Kind).Scan(&gated)
		return err != nil && strings.Contains(err.Error(), "1205")
	}

	exec("START TRANSACTION")
	var st string
	var rid, token, hid int64
	if err := c.QueryRowContext(ctx, "CALL baton_request(?, 'mem', 'n', 's2', 'c', 'W', 2, 0, 0)", id.Kind).Scan(&st, &rid, &token, &hid); err != nil || st != "P" {
		t.Fatalf("s2's request: %q, %v; want P", st, err)
	}
	modified("a waiting request")
	if !mutexBusy() {
		t.Fatal("the request's transaction does not hold the identifier's mutex row")
	}
	// The release as {p}release_instances makes it: the instance deleted
	// under the mutex, then handed on.
	exec("DELETE FROM baton_lock_requests WHERE id = ?", holder.ID)
	exec("SET @i = '[]', @g = '[]'")
	exec("CALL baton_release_ident(?, 'mem', 'n', 0, 1, '', @i, @g)", id.Kind)
	if got := status(rid); got != "G" {
		t.Fatalf("s2's request after the hand-on: %s, want G", got)
	}
	modified("the hand-on")
	exec("COMMIT")
	if mutexBusy() {
		t.Fatal("the identifier's mutex row is still locked after the commit")
	}
}

// TestRequestIDsAfterRestart: a restart empties the MEMORY lock state,
// starts lock_requests' AUTO_INCREMENT again and sets every MEMORY
// table's size limit to the server's global max_heap_table_size (as
// TRUNCATE under its default does here); the first session of the new
// incarnation makes the tables again at their sizes (newIncarnation) and
// starts request ids above every id handed out before
// (incarnation_seed_requests), so that a client still polling an old id
// cannot read a new request as its own.
func TestRequestIDsAfterRestart(t *testing.T) {
	ctx, d := freshDriver(t)
	id := driver.Ident{Kind: driver.KindService, NS: "rs", Name: "n"}
	grantedSlow(t, d, "s1", id, driver.ModeWrite)
	old := grantedSlow(t, d, "s1", id, driver.ModeWrite) // a request row, not the fast holder
	if old.ID <= 0 {
		t.Fatalf("the second instance's id is %d, want a request row's", old.ID)
	}
	c := conn(t, d.SQL)
	limits := func() (out []int64) {
		t.Helper()
		for _, table := range []string{"lock_fast", "lock_idents", "lock_requests"} {
			var n int64
			if err := c.QueryRowContext(ctx, "SELECT MAX_DATA_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
				"baton_"+table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		return out
	}
	for _, q := range []string{"DELETE FROM baton_incarnation", "SET SESSION max_heap_table_size = 16777216",
		"TRUNCATE TABLE baton_lock_requests", "TRUNCATE TABLE baton_lock_idents", "TRUNCATE TABLE baton_lock_fast"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	small := limits()
	if _, _, err := d.Incarnation(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	for i, n := range limits() {
		if n <= 8*small[i] {
			t.Fatalf("after the new incarnation the MEMORY tables hold %v bytes at most (%v after the restart); want them made again at their sizes", limits(), small)
		}
	}
	grantedSlow(t, d, "s2", id, driver.ModeRead)
	fresh := grantedSlow(t, d, "s2", id, driver.ModeRead)
	if fresh.ID <= old.ID {
		t.Fatalf("a request after the restart has id %d, not above the %d handed out before it", fresh.ID, old.ID)
	}
	var left int
	if err := d.SQL.QueryRow("SELECT COUNT(*) FROM baton_lock_requests WHERE session_id = ''").Scan(&left); err != nil || left != 0 {
		t.Fatalf("the seed's row: %d left, %v; want it gone", left, err)
	}
}

// TestPurgeUnderMutex: an idle identifier's rows (its counters in MEMORY,
// its mutex in InnoDB) are deleted only under its mutex: while another
// transaction holds the mutex (a call in flight on it) the purge skips
// the identifier and leaves both rows; once it is free, both go. A mutex
// row whose counters a restart emptied goes as well.
func TestPurgeUnderMutex(t *testing.T) {
	ctx, d := freshDriver(t)
	id := driver.Ident{Kind: driver.KindService, NS: "pu", Name: "n"}
	grantedSlow(t, d, "s1", id, driver.ModeWrite)
	if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: id.Kind, NS: id.NS, Name: id.Name}); err != nil || n != 1 {
		t.Fatalf("release: %d %v", n, err)
	}
	if _, err := d.demote(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SQL.ExecContext(ctx, "UPDATE baton_lock_idents SET fence = fence - 2000000 WHERE ns = 'pu'"); err != nil {
		t.Fatal(err)
	}
	rows := func() (counters, mutex int) {
		t.Helper()
		if err := d.SQL.QueryRow("SELECT (SELECT COUNT(*) FROM baton_lock_idents WHERE ns = 'pu'), (SELECT COUNT(*) FROM baton_lock_mutex WHERE ns = 'pu')").
			Scan(&counters, &mutex); err != nil {
			t.Fatal(err)
		}
		return
	}
	if c, m := rows(); c != 1 || m != 1 {
		t.Fatalf("before the purge: %d counters rows, %d mutex rows; want 1 and 1", c, m)
	}
	other := lockMutex(t, ctx, d, "pu", "n")
	if n, err := d.NoTx().LockIdentPurgeIdle(ctx); err != nil || n != 0 {
		t.Fatalf("purge while the mutex is held: %d, %v; want 0", n, err)
	}
	if c, m := rows(); c != 1 || m != 1 {
		t.Fatalf("after a purge that skipped it: %d counters rows, %d mutex rows; want 1 and 1", c, m)
	}
	if err := other.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n, err := d.NoTx().LockIdentPurgeIdle(ctx); err != nil || n != 1 {
		t.Fatalf("purge once the mutex is free: %d, %v; want 1", n, err)
	}
	if c, m := rows(); c != 0 || m != 0 {
		t.Fatalf("after the purge: %d counters rows, %d mutex rows; want none", c, m)
	}
	// A mutex row a restart left without its counters' row (the MEMORY
	// tables emptied) goes too.
	grantedSlow(t, d, "s1", id, driver.ModeWrite)
	if _, err := d.SQL.ExecContext(ctx, "DELETE FROM baton_lock_requests WHERE ns = 'pu'"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SQL.ExecContext(ctx, "DELETE FROM baton_lock_idents WHERE ns = 'pu'"); err != nil {
		t.Fatal(err)
	}
	if n, err := d.NoTx().LockIdentPurgeIdle(ctx); err != nil || n != 1 {
		t.Fatalf("purge of a mutex row without counters: %d, %v; want 1", n, err)
	}
	if c, m := rows(); c != 0 || m != 0 {
		t.Fatalf("after the purge of the mutex row left alone: %d counters rows, %d mutex rows; want none", c, m)
	}
}
