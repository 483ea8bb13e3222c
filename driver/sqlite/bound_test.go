package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/sqlite"
	"github.com/batonhq/baton/internal/batontest"
)

// BenchmarkPairBound: the bound of the lock engine's SQLite pair, in one
// run, the loops interleaved: the narrowest write transactions a lock can be (an UPDATE
// of one row's holder and fence, and one clearing it, on a row of a table
// in the same database file, so with the driver's pragmas), the driver's
// own statements (fast_acquire, release_inline_name) through its pool,
// and the driver's acquire and release of one name. BenchmarkLockPair
// (root package) is the engine's pair around the driver's:
//
//	go test -run '^$' -bench PairBound -benchtime 20000x -count 3 ./driver/sqlite
func BenchmarkPairBound(b *testing.B) {
	ctx := context.Background()
	d := batontest.Migrated(b, "sqlite:"+filepath.Join(b.TempDir(), "bound.db")).(*sqlite.Driver)
	if _, err := d.SQL.ExecContext(ctx, `CREATE TABLE bound_pair (ns BLOB NOT NULL, name BLOB NOT NULL, holder TEXT, fence INTEGER NOT NULL,
		PRIMARY KEY (ns, name)) WITHOUT ROWID`); err != nil {
		b.Fatal(err)
	}
	if _, err := d.SQL.ExecContext(ctx, `INSERT INTO bound_pair VALUES (x'01', x'02', NULL, 0)`); err != nil {
		b.Fatal(err)
	}
	acq, err := d.SQL.PrepareContext(ctx, `UPDATE bound_pair SET holder = ?, fence = fence + 1 WHERE ns = ? AND name = ? AND holder IS NULL RETURNING fence`)
	if err != nil {
		b.Fatal(err)
	}
	rel, err := d.SQL.PrepareContext(ctx, `UPDATE bound_pair SET holder = NULL WHERE ns = ? AND name = ? AND holder = ? RETURNING fence`)
	if err != nil {
		b.Fatal(err)
	}
	id := driver.Ident{Kind: driver.KindService, NS: "bench", Name: "pair"}
	p := driver.FastAcquireParams{SessionID: "s1", ClientID: "c1", Ident: id, Mode: driver.ModeWrite}
	rp := driver.FastReleaseParams{SessionID: "s1", Kind: id.Kind, NS: id.NS, Name: id.Name, InlineOnly: true}
	ns, name := []byte{1}, []byte{2}
	loops := map[string]func(call int64) error{
		"narrowest": func(int64) error {
			var fence int64
			if err := acq.QueryRowContext(ctx, "s1", ns, name).Scan(&fence); err != nil {
				return fmt.Errorf("acquire: %w", err)
			}
			if err := rel.QueryRowContext(ctx, ns, name, "s1").Scan(&fence); err != nil {
				return fmt.Errorf("release: %w", err)
			}
			return nil
		},
		"statements": func(call int64) error {
			var rid, token int64
			if err := d.RowNamed(ctx, nil, "fast_acquire", "s1", "c1", id.Kind, []byte(id.NS), []byte(id.Name), string(driver.ModeWrite), call, -call).Scan(&rid, &token); err != nil {
				return fmt.Errorf("fast_acquire: %w", err)
			}
			rows, err := d.QueryNamed(ctx, nil, "release_inline_name", "s1", id.Kind, []byte(id.NS), []byte(id.Name))
			if err != nil {
				return fmt.Errorf("release_inline_name: %w", err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			if n != 1 || rows.Err() != nil {
				return fmt.Errorf("release_inline_name: released %d, %v", n, rows.Err())
			}
			return nil
		},
		"driver": func(call int64) error {
			p.CallID = call
			if _, ok, err := d.LockFastAcquire(ctx, p); !ok || err != nil {
				return fmt.Errorf("LockFastAcquire: granted %v, %v", ok, err)
			}
			if n, _, err := d.LockFastRelease(ctx, rp); n != 1 || err != nil {
				return fmt.Errorf("LockFastRelease: released %d, %v", n, err)
			}
			return nil
		},
	}
	batontest.Interleave(b, "pairs/s", []string{"narrowest", "statements", "driver"}, loops)
}
