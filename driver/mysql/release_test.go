package mysql

import (
	"context"
	"database/sql"
	sqldrv "database/sql/driver"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

// TestReleaseLocksOnlyItsRows: a release through InnoDB locks its own
// session's request rows only, even when the table's statistics are at
// their worst: a handful of live rows beside many deleted ones that purge
// has not removed yet (a transaction with an older snapshot holds them),
// the state in which MariaDB read lock_requests whole in id order and
// locked every row it passed (queries.sql, release_list_ns). Another
// transaction holds the oldest and the newest reader's request rows
// locked; the other readers' releases, by name and by namespace, must
// not wait for them.
func TestReleaseLocksOnlyItsRows(t *testing.T) {
	ctx := context.Background()
	d := openDriver(t, newDSN(t))
	exec := func(db interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
	}, q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	// The statistics of an empty table, kept (the bench's tables had
	// them: the lock tables hold a handful of rows at any moment).
	exec(d.SQL, "ALTER TABLE baton_lock_requests STATS_AUTO_RECALC = 0")
	exec(d.SQL, "ANALYZE TABLE baton_lock_requests")
	// Purge held back: a consistent snapshot, open until the test ends.
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
	exec(snap, "SELECT COUNT(*) FROM baton_lock_requests")
	// Deleted rows of the sessions below, which the indexes keep.
	exec(d.SQL, `INSERT INTO baton_lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at)
		WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 400)
		SELECT CONCAT('s', 1 + n % 4), 'c', 0, 'ns', 'n', 'R', 'G', 1, 1, 1 FROM s`)
	exec(d.SQL, "DELETE FROM baton_lock_requests")

	id := driver.Ident{Kind: driver.KindService, NS: "ns", Name: "n"}
	var held []driver.Request
	for _, s := range []string{"s1", "s2", "s3", "s4"} {
		r, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: s, ClientID: "c", Ident: id, Mode: driver.ModeRead, CallID: 1})
		if err != nil || !ok {
			t.Fatalf("reader %s: %v %v", s, ok, err)
		}
		held = append(held, r)
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
		done := make(chan error, 1)
		go func() {
			n, _, err := d.LockFastRelease(ctx, p)
			if err == nil && n != 1 {
				t.Errorf("%s released %d, want 1", p.SessionID, n)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("release of %s: %v", p.SessionID, err)
			}
		case <-time.After(15 * time.Second):
			_ = other.Rollback() // lets the release end
			<-done
			t.Fatalf("the release of %s waited for another session's request row", p.SessionID)
		}
	}
}
