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

// BenchmarkMulti10Bound: the bound of the multi10 case on MariaDB
// (docs/benchmarks.md, "MariaDB: many names without a derived table"), in
// one run, each loop on a connection of its own and the loops
// interleaved: ten native GET_LOCKs and RELEASE_ALL_LOCKS (the baseline),
// the narrowest lock state (a MEMORY row per name with only its holder:
// one upsert of the ten names and one update to release them), and the
// driver's calls (ten names taken in one call, released with their
// namespace), with its acquire through the Sequence engine and, in a
// second driver, through a derived table as on a server without it.
//
//	BATON_TEST_BACKENDS=mysql go test -run '^$' -bench Bound -benchtime 6000x -count 3 ./driver/mysql
func BenchmarkMulti10Bound(b *testing.B) {
	ctx := context.Background()
	dsn := newDSN(b)
	seq, derived := openDriver(b, dsn), openDriver(b, dsn)
	if !seq.mariadb {
		b.Skip("the many-name acquire through the Sequence engine is MariaDB's")
	}
	derived.noSeq.Store(true)
	names := make([]string, 10)
	for i := range names {
		names[i] = fmt.Sprintf("multi.%d", i)
	}
	inc, _, err := seq.Incarnation(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	// A driver's loop, for a session of its own; its first calls make the
	// rows and the hot pool's prepared statement.
	calls := func(d *Driver, session string) func(call int64) error {
		p := driver.FastAcquireParams{SessionID: session, ClientID: "c1", Ident: driver.Ident{Kind: 1, NS: "bench"},
			Mode: driver.ModeWrite, Incarnation: inc}
		rp := driver.FastReleaseParams{SessionID: session, Kind: 1, NS: "bench", InlineOnly: true}
		loop := func(call int64) error {
			p.CallID = call
			if _, ok, err := d.LockFastAcquireMany(ctx, p, names); !ok || err != nil {
				return fmt.Errorf("LockFastAcquireMany: granted %v, %v", ok, err)
			}
			if n, _, err := d.LockFastRelease(ctx, rp); n != len(names) || err != nil {
				return fmt.Errorf("LockFastRelease: released %d, %v; want %d", n, err, len(names))
			}
			return nil
		}
		for range 2 {
			if err := loop(0); err != nil {
				b.Fatal(err)
			}
		}
		return loop
	}
	native, narrow := conn(b, seq.SQL), conn(b, seq.SQL)

	// The narrowest lock state: the holder alone, in MEMORY.
	if _, err := narrow.ExecContext(ctx, `CREATE TABLE bound_multi (name VARBINARY(64) PRIMARY KEY, holder VARCHAR(64)) ENGINE=MEMORY`); err != nil {
		b.Fatal(err)
	}
	rows := strings.TrimSuffix(strings.Repeat("(?, ?), ", len(names)), ", ")
	narrowTake := prepare(b, narrow, `INSERT INTO bound_multi (name, holder) VALUES `+rows+
		` ON DUPLICATE KEY UPDATE holder = IF(holder IS NULL, VALUES(holder), holder)`)
	narrowFree := prepare(b, narrow, `UPDATE bound_multi SET holder = NULL WHERE holder = ?`)
	narrowArgs := make([]any, 0, 2*len(names))
	for _, n := range names {
		narrowArgs = append(narrowArgs, []byte(n), "s1")
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
		"driver":  calls(seq, "s1"),
		"derived": calls(derived, "s2"),
	}
	batontest.Interleave(b, "calls/s", []string{"native", "narrowest", "driver", "derived"}, loops)
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
