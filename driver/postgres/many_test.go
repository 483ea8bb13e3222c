package postgres_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/batontest"
)

// TestFastAcquireManyRace: fast_acquire_many_free reads the names without
// locking them and then upserts each. A name another call takes between
// the two is refused alone; the names granted beside it are released
// again before LockFastAcquireMany reports that it took nothing. Here the
// other call is a transaction of the test's own, which makes "b" held in
// the lock row and commits once the statement waits for that row.
func TestFastAcquireManyRace(t *testing.T) {
	dsn := batontest.NewDSN(t, "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := batontest.Migrated(t, dsn)
	many := d.Locks()
	p := driver.FastAcquireParams{SessionID: "s1", ClientID: "c1", Mode: driver.ModeWrite, CallID: 7,
		Ident: driver.Ident{Kind: 1, NS: "m"}}
	names := []string{"a", "b", "c"}
	// The lock rows exist, free.
	if _, ok, err := many.LockFastAcquireMany(ctx, p, names); err != nil || !ok {
		t.Fatalf("the free names: %v, %v", ok, err)
	}
	if _, _, err := d.Locks().LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: 1, NS: "m", InlineOnly: true}); err != nil {
		t.Fatal(err)
	}

	db := batontest.SQLDB(t, dsn)
	// Twice: through a driver that has not seen the rows
	// (fast_acquire_many_free), and through the one that made them
	// (fast_acquire_many_existing, then the former).
	for _, seen := range []bool{false, true} {
		raceMany(t, ctx, db, dsn, many, p, names, seen)
	}
}

// raceMany is TestFastAcquireManyRace's race once, "b" free again after
// it; a driver of its own when !seen.
func raceMany(t *testing.T, ctx context.Context, db *sql.DB, dsn string, many driver.Locks, p driver.FastAcquireParams, names []string, seen bool) {
	if !seen {
		many = batontest.Driver(t, dsn).Locks()
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `UPDATE baton_lock_idents SET n_w = 1, h_id = 999999, h_session = 'other', h_mode = 'W'
		WHERE kind = 1 AND ns = 'm' AND name = 'b'`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, ok, err := many.LockFastAcquireMany(ctx, p, names)
		done <- result{ok, err}
	}()
	for waiting := false; !waiting; {
		if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%lock_idents%' AND datname = current_database())`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			t.Fatalf("the statement did not wait for the row the test holds: %v, %v", r.ok, r.err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.ok {
		t.Fatalf("names of which another call took one: ok %v, error %v; want neither", r.ok, r.err)
	}
	var kept int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM baton_lock_idents
		WHERE kind = 1 AND ns = 'm' AND (h_session = 's1' OR n_w <> 0) AND name <> 'b'`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != 0 {
		t.Fatalf("%d of the names granted beside the refused one are still held", kept)
	}
	if _, err := db.ExecContext(ctx, `UPDATE baton_lock_idents SET n_w = 0, h_id = NULL, h_session = NULL, h_mode = NULL
		WHERE kind = 1 AND ns = 'm' AND name = 'b'`); err != nil {
		t.Fatal(err)
	}
}
