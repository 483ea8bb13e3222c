package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/batontest"
)

// BenchmarkMulti10Bound: the bound of the multi10 case on MySQL/MariaDB
// (docs/benchmarks.md, "MariaDB: many names without a derived table"), in
// one run, each loop on a connection of its own and the loops
// interleaved: ten native GET_LOCKs and RELEASE_ALL_LOCKS (the baseline),
// the narrowest lock state (a MEMORY row per name with only its holder:
// one upsert of the ten names and one update to release them), the
// driver's own two statements sent straight through database/sql (the
// acquire through the Sequence engine, as the driver sends it, and
// through a derived table, as it does on a server without the engine),
// and the driver's calls.
//
//	BATON_TEST_BACKENDS=mysql go test -run '^$' -bench Bound -benchtime 3000x -count 3 ./driver/mysql
func BenchmarkMulti10Bound(b *testing.B) {
	ctx := context.Background()
	d := openDriver(b, newDSN(b))
	if !d.mariadb {
		b.Skip("the driver's statement with RETURNING is MariaDB's")
	}
	names := make([]string, 10)
	for i := range names {
		names[i] = fmt.Sprintf("multi.%d", i)
	}
	p := driver.FastAcquireParams{SessionID: "s1", ClientID: "c1", Ident: driver.Ident{Kind: 1, NS: "bench"}, Mode: driver.ModeWrite}
	rp := driver.FastReleaseParams{SessionID: "s1", Kind: 1, NS: "bench", InlineOnly: true}
	inc, _, err := d.Incarnation(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	p.Incarnation = inc
	release := func() error {
		if n, _, err := d.LockFastRelease(ctx, rp); n != len(names) || err != nil {
			return fmt.Errorf("LockFastRelease: released %d, %v; want %d", n, err, len(names))
		}
		return nil
	}
	// The first call makes the rows and the hot pool's prepared statement.
	for range 2 {
		if _, ok, err := d.LockFastAcquireMany(ctx, p, names); !ok || err != nil {
			b.Fatalf("acquire: %v, %v", ok, err)
		}
		if err := release(); err != nil {
			b.Fatal(err)
		}
	}
	native, narrow, stmts := conn(b, d.SQL), conn(b, d.SQL), conn(b, d.hot)

	// The narrowest lock state: the holder alone, in MEMORY.
	if _, err := narrow.ExecContext(ctx, `CREATE TABLE bound_multi (name VARBINARY(64) PRIMARY KEY, holder VARCHAR(64)) ENGINE=MEMORY`); err != nil {
		b.Fatal(err)
	}
	rows := make([]string, len(names))
	for i := range rows {
		rows[i] = "(?, ?)"
	}
	narrowTake := prepare(b, narrow, `INSERT INTO bound_multi (name, holder) VALUES `+strings.Join(rows, ", ")+
		` ON DUPLICATE KEY UPDATE holder = IF(holder IS NULL, VALUES(holder), holder)`)
	narrowFree := prepare(b, narrow, `UPDATE bound_multi SET holder = NULL WHERE holder = ?`)
	narrowArgs := make([]any, 0, 2*len(names))
	for _, n := range names {
		narrowArgs = append(narrowArgs, []byte(n), "s1")
	}

	// The driver's statements, as LockFastAcquireMany and LockFastRelease
	// send them for ten free names.
	free := prepare(b, stmts, d.Q("fast_release_ns"))
	type form struct {
		text func(n int) string
		args func(driver.FastAcquireParams, []string, map[string]int64) []any
	}
	statements := func(f form) func(call int64) error {
		hids := map[string]int64{}
		take := prepare(b, stmts, f.text(len(names))+returning)
		return func(call int64) error {
			for i, n := range names {
				hids[n] = call*16 + int64(i)
			}
			pc := p
			pc.CallID = call
			rs, err := take.QueryContext(ctx, f.args(pc, names, hids)...)
			if err != nil {
				return fmt.Errorf("acquire: %w", err)
			}
			n := 0
			for rs.Next() {
				n++
			}
			rs.Close()
			if err := rs.Err(); err != nil || n != len(names) {
				return fmt.Errorf("acquire: %d rows, %v; want %d", n, err, len(names))
			}
			res, err := free.ExecContext(ctx, p.SessionID, p.Kind, bin(p.NS))
			if err != nil {
				return fmt.Errorf("fast_release_ns: %w", err)
			}
			if k, err := res.RowsAffected(); err != nil || k != int64(len(names)) {
				return fmt.Errorf("fast_release_ns: %d rows, %v; want %d", k, err, len(names))
			}
			return nil
		}
	}

	loops := map[string]func(call int64) error{
		"native": func(int64) error {
			for i := range names {
				var got sql.NullInt64
				if err := native.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", fmt.Sprintf("bound.%d", i)).Scan(&got); err != nil || got.Int64 != 1 {
					return fmt.Errorf("GET_LOCK: %v, %v", got, err)
				}
			}
			_, err := native.ExecContext(ctx, "SELECT RELEASE_ALL_LOCKS()")
			return err
		},
		"narrowest": func(int64) error {
			if _, err := narrowTake.ExecContext(ctx, narrowArgs...); err != nil {
				return err
			}
			res, err := narrowFree.ExecContext(ctx, "s1")
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != int64(len(names)) {
				return fmt.Errorf("narrowest release: %d rows, %v", n, err)
			}
			return nil
		},
		"statements": statements(form{d.manySeqText, d.manySeqArgs}),
		"derived":    statements(form{d.manyUnionText, d.manyUnionArgs}),
		"driver": func(call int64) error {
			p.CallID = call
			if _, ok, err := d.LockFastAcquireMany(ctx, p, names); !ok || err != nil {
				return fmt.Errorf("LockFastAcquireMany: granted %v, %v", ok, err)
			}
			return release()
		},
	}
	batontest.Interleave(b, "calls/s", []string{"native", "narrowest", "statements", "derived", "driver"}, loops)
}

// conn is a connection of db's own for one loop, closed with the test.
func conn(t testing.TB, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// prepare prepares q on c, closed with the test.
func prepare(t testing.TB, c *sql.Conn, q string) *sql.Stmt {
	t.Helper()
	st, err := c.PrepareContext(context.Background(), q)
	if err != nil {
		t.Fatalf("prepare %s: %v", q, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
