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

// BenchmarkMulti10Bound: the bound of the multi10 case on MariaDB, in
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

// BenchmarkSlowPathBound measures one hand-on of MariaDB's slow path (the
// identifier's row locked, the holder's request deleted, the first waiter
// granted, a new waiter queued, the fence moved, the commit) as one
// procedure call, with its state in InnoDB ("innodb"), in MEMORY tables
// serialized by a locking read of the identifier's InnoDB row
// ("memory": the transaction changes no InnoDB row, so its commit writes
// no redo and waits for no flush), and in MEMORY with no serialization at
// all ("floor", not safe: what the statements cost). Each loop on a
// connection of its own, interleaved; besides calls per second it reports
// the redo log writes and the data fsyncs per call that each loop caused
// in a run of its own (the server's counters, so run it alone).
//
//	BATON_TEST_BACKENDS=mysql go test -run '^$' -bench SlowPathBound -benchtime 3000x -count 3 ./driver/mysql
func BenchmarkSlowPathBound(b *testing.B) {
	ctx := context.Background()
	d := openDriver(b, newDSN(b))
	if !d.mariadb {
		b.Skip("measured on MariaDB")
	}
	setup := conn(b, d.SQL)
	exec := func(q string) {
		if _, err := setup.ExecContext(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE sb_mutex (k INT PRIMARY KEY) ENGINE=InnoDB`)
	exec(`INSERT INTO sb_mutex VALUES (1)`)
	names := []string{"innodb", "memory", "floor"}
	// Per variant its own tables and procedure: the same statements.
	for _, v := range names {
		engine, lock := "MEMORY", `SELECT fence INTO v_fence FROM sb_ident_`+v+` WHERE k = p_k;`
		switch v {
		case "innodb":
			engine, lock = "InnoDB", `SELECT fence INTO v_fence FROM sb_ident_innodb WHERE k = p_k FOR UPDATE;`
		case "memory":
			lock = `SELECT k INTO v_fence FROM sb_mutex WHERE k = p_k FOR UPDATE;
    ` + lock
		}
		exec(`CREATE TABLE sb_ident_` + v + ` (k INT PRIMARY KEY, fence BIGINT NOT NULL) ENGINE=` + engine)
		exec(`CREATE TABLE sb_req_` + v + ` (id BIGINT AUTO_INCREMENT, k INT NOT NULL, status CHAR(1) NOT NULL,
    PRIMARY KEY USING BTREE (id), KEY USING BTREE (k, id)) ENGINE=` + engine)
		exec(`CREATE PROCEDURE sb_handon_` + v + `(IN p_k INT)
MODIFIES SQL DATA
BEGIN
    DECLARE v_fence BIGINT;
    START TRANSACTION;
    ` + lock + `
    DELETE FROM sb_req_` + v + ` WHERE k = p_k AND status = 'G';
    UPDATE sb_req_` + v + ` SET status = 'G' WHERE k = p_k AND status = 'P' ORDER BY k, id LIMIT 1;
    INSERT INTO sb_req_` + v + ` (k, status) VALUES (p_k, 'P');
    UPDATE sb_ident_` + v + ` SET fence = fence + 1 WHERE k = p_k;
    COMMIT;
    SELECT v_fence;
END`)
		exec(`INSERT INTO sb_ident_` + v + ` VALUES (1, 0)`)
		exec(`INSERT INTO sb_req_` + v + ` (k, status) VALUES (1, 'G'), (1, 'P')`)
	}
	loops := make(map[string]func(int64) error, len(names))
	for _, v := range names {
		st := prepare(b, conn(b, d.SQL), `CALL sb_handon_`+v+`(1)`)
		var last int64 = -1
		loops[v] = func(int64) error {
			var fence int64
			if err := st.QueryRowContext(ctx).Scan(&fence); err != nil {
				return fmt.Errorf("%s: %w", v, err)
			}
			if fence != last+1 {
				return fmt.Errorf("%s: fence %d after %d", v, fence, last)
			}
			last = fence
			return nil
		}
	}
	// The server's counters per call, each loop alone.
	counters := func() (writes, fsyncs int64) {
		rows, err := setup.QueryContext(ctx, `SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_log_writes', 'Innodb_data_fsyncs')`)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var n int64
			if err := rows.Scan(&name, &n); err != nil {
				b.Fatal(err)
			}
			if name == "Innodb_log_writes" {
				writes = n
			} else {
				fsyncs = n
			}
		}
		return writes, fsyncs
	}
	const alone = 200
	perCall := make(map[string][2]float64, len(names))
	for _, v := range names {
		w0, f0 := counters()
		for i := range alone {
			if err := loops[v](int64(i)); err != nil {
				b.Fatal(err)
			}
		}
		w1, f1 := counters()
		perCall[v] = [2]float64{float64(w1-w0) / alone, float64(f1-f0) / alone}
	}
	batontest.Interleave(b, "calls/s", names, loops)
	for _, v := range names { // after Interleave, whose timer reset drops metrics
		b.ReportMetric(perCall[v][0], v+"-logwrites/call")
		b.ReportMetric(perCall[v][1], v+"-fsyncs/call")
	}
}
