package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/batontest"
)

// The bounds of the lock engine's PostgreSQL figures, in one run: the native primitive, the
// narrowest lock row, the driver's own statements sent straight through
// pgx with nothing of the engine around them, and (for the pair) the
// driver's calls, each loop on a connection of its own and the loops
// interleaved, so that the engine's figure (BenchmarkLockPair, `baton
// bench locks`) can be read against what its statements cost on the same
// machine:
//
//	BATON_TEST_BACKENDS=postgres go test -run '^$' -bench Bound -benchtime 3000x -count 3 ./driver/postgres

// BenchmarkPairBound: an uncontended write lock taken and released on one
// name.
func BenchmarkPairBound(b *testing.B) {
	ctx, dsn, d := migrated(b)
	id := driver.Ident{Kind: 1, NS: "bench", Name: "pair"}
	p := driver.FastAcquireParams{SessionID: "s1", ClientID: "c1", Ident: id, Mode: driver.ModeWrite}
	rp := driver.FastReleaseParams{SessionID: "s1", Kind: id.Kind, NS: id.NS, Name: id.Name, InlineOnly: true}
	// The driver's first call made the row and marked it seen: from then
	// on its acquire is fast_acquire_existing, as below.
	if _, ok, err := d.LockFastAcquire(ctx, p); !ok || err != nil {
		b.Fatalf("acquire: %v, %v", ok, err)
	}
	if _, _, err := d.LockFastRelease(ctx, rp); err != nil {
		b.Fatal(err)
	}
	native, narrow, stmts := pgxConn(b, dsn), pgxConn(b, dsn), pgxConn(b, dsn)
	ns, name := []byte(id.NS), []byte(id.Name)
	// The narrowest lock row (the prototype): the holder and the
	// fence inline, keyed by the identifier, nothing else written.
	for _, q := range []string{`CREATE UNLOGGED TABLE bound_pair (kind smallint, ns bytea, name bytea, holder text, fence bigint NOT NULL,
		PRIMARY KEY (kind, ns, name))`, `INSERT INTO bound_pair VALUES (1, 'bench', 'pair', NULL, 0)`} {
		if _, err := narrow.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	loops := map[string]func(call int64) error{
		"native": func(int64) error {
			if _, err := native.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(7)); err != nil {
				return err
			}
			_, err := native.Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(7))
			return err
		},
		"narrowest": func(int64) error {
			var fence int64
			if err := narrow.QueryRow(ctx, `UPDATE bound_pair SET holder = $4, fence = fence + 1
				WHERE kind = $1 AND ns = $2 AND name = $3 AND holder IS NULL RETURNING fence`, id.Kind, ns, name, "s1").Scan(&fence); err != nil {
				return fmt.Errorf("narrowest acquire: %w", err)
			}
			if err := narrow.QueryRow(ctx, `UPDATE bound_pair SET holder = NULL
				WHERE kind = $1 AND ns = $2 AND name = $3 AND holder = $4 RETURNING fence`, id.Kind, ns, name, "s1").Scan(&fence); err != nil {
				return fmt.Errorf("narrowest release: %w", err)
			}
			return nil
		},
		"statements": func(call int64) error {
			var rid, token int64
			var inc *int64
			if err := stmts.QueryRow(ctx, d.Q("fast_acquire_existing"), id.Kind, ns, name, 0, 1, "s1", "c1", string(driver.ModeWrite), call).
				Scan(&rid, &token, &inc); err != nil {
				return fmt.Errorf("fast_acquire_existing: %w", err)
			}
			return released(ctx, stmts, d, "s1", id)
		},
		"driver": func(call int64) error {
			p.CallID = call
			if _, ok, err := d.LockFastAcquire(ctx, p); !ok || err != nil {
				return fmt.Errorf("LockFastAcquire: granted %v, %v", ok, err)
			}
			_, _, err := d.LockFastRelease(ctx, rp)
			return err
		},
	}
	batontest.Interleave(b, "pairs/s", []string{"native", "narrowest", "statements", "driver"}, loops)
}

// BenchmarkMulti10Bound: ten names of one namespace taken in one call and
// released with the namespace (the multi10 case), against ten native
// locks and pg_advisory_unlock_all; the narrowest lock rows (the holder
// and the fence alone, one update to take the ten and one to release
// them) bound what any two statements on rows can reach.
func BenchmarkMulti10Bound(b *testing.B) {
	ctx, dsn, d := migrated(b)
	names := make([]string, 10)
	bnames := make([][]byte, 10)
	for i := range names {
		names[i] = fmt.Sprintf("multi.%d", i)
		bnames[i] = []byte(names[i])
	}
	p := driver.FastAcquireParams{SessionID: "s1", ClientID: "c1", Ident: driver.Ident{Kind: 1, NS: "bench"}, Mode: driver.ModeWrite}
	rp := driver.FastReleaseParams{SessionID: "s1", Kind: 1, NS: "bench", InlineOnly: true}
	release := func() error {
		if n, _, err := d.LockFastRelease(ctx, rp); n != len(names) || err != nil {
			return fmt.Errorf("LockFastRelease: released %d, %v; want %d", n, err, len(names))
		}
		return nil
	}
	// The first call made the rows and marked them seen: from then on the
	// acquire is fast_acquire_many_existing, as below.
	if _, ok, err := d.LockFastAcquireMany(ctx, p, names); !ok || err != nil {
		b.Fatalf("acquire: %v, %v", ok, err)
	}
	if err := release(); err != nil {
		b.Fatal(err)
	}
	native, stmts, narrow := pgxConn(b, dsn), pgxConn(b, dsn), pgxConn(b, dsn)
	for _, q := range []string{`CREATE UNLOGGED TABLE bound_multi (kind smallint, ns bytea, name bytea, holder text, fence bigint NOT NULL,
		PRIMARY KEY (kind, ns, name))`,
		`INSERT INTO bound_multi SELECT 1, 'bench', ('multi.' || g)::bytea, NULL, 0 FROM generate_series(0, 9) g`} {
		if _, err := narrow.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	loops := map[string]func(call int64) error{
		"narrowest": func(int64) error {
			tag, err := narrow.Exec(ctx, `UPDATE bound_multi SET holder = 's1', fence = fence + 1 WHERE kind = 1 AND ns = 'bench' AND name = ANY ($1::bytea[]) AND holder IS NULL`, bnames)
			if err != nil || tag.RowsAffected() != int64(len(names)) {
				return fmt.Errorf("narrowest take: %v, %v", tag, err)
			}
			tag, err = narrow.Exec(ctx, `UPDATE bound_multi SET holder = NULL WHERE kind = 1 AND ns = 'bench' AND holder = 's1'`)
			if err != nil || tag.RowsAffected() != int64(len(names)) {
				return fmt.Errorf("narrowest release: %v, %v", tag, err)
			}
			return nil
		},
		"native": func(int64) error {
			for i := range names {
				if _, err := native.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(100+i)); err != nil {
					return err
				}
			}
			_, err := native.Exec(ctx, "SELECT pg_advisory_unlock_all()")
			return err
		},
		"statements": func(call int64) error {
			rows, err := stmts.Query(ctx, d.Q("fast_acquire_many_existing"), p.Kind, []byte(p.NS), bnames, 0, 1, "s1", "c1", string(driver.ModeWrite), call)
			if err != nil {
				return fmt.Errorf("fast_acquire_many_existing: %w", err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			if err := rows.Err(); err != nil || n != len(names) {
				return fmt.Errorf("fast_acquire_many_existing: %d rows, %v; want %d", n, err, len(names))
			}
			if rows, err = stmts.Query(ctx, d.Q("release_inline"), "s1", p.Kind, []byte(p.NS), d.channel); err != nil {
				return fmt.Errorf("release_inline: %w", err)
			}
			for n = 0; rows.Next(); n++ {
			}
			rows.Close()
			if err := rows.Err(); err != nil || n != len(names) {
				return fmt.Errorf("release_inline: %d rows, %v; want %d", n, err, len(names))
			}
			return nil
		},
		"driver": func(call int64) error {
			p.CallID = call
			if _, ok, err := d.LockFastAcquireMany(ctx, p, names); !ok || err != nil {
				return fmt.Errorf("LockFastAcquireMany: granted %v, %v", ok, err)
			}
			return release()
		},
	}
	batontest.Interleave(b, "calls/s", []string{"native", "narrowest", "statements", "driver"}, loops)
}

// released runs release_inline_name for the session's instance of id and
// fails unless it released one.
func released(ctx context.Context, c *pgx.Conn, d *Driver, session string, id driver.Ident) error {
	var n int
	rows, err := c.Query(ctx, d.Q("release_inline_name"), session, id.Kind, []byte(id.NS), []byte(id.Name), d.channel)
	if err != nil {
		return fmt.Errorf("release_inline_name: %w", err)
	}
	for rows.Next() {
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("release_inline_name: %w", err)
	}
	if n != 1 {
		return fmt.Errorf("release_inline_name released %d names, want 1", n)
	}
	return nil
}

// BenchmarkContend8Bound: eight connections loop taking and releasing one
// write lock, each waiting in the server: natively, and through the
// driver's turnstile statements (turnstile_acquire, then
// release_inline_name and the turnstile's unlock in one batch, as a
// session's line sends them), so every wait is behind the turnstile.
func BenchmarkContend8Bound(b *testing.B) {
	ctx, dsn, d := migrated(b)
	id := driver.Ident{Kind: 1, NS: "bench", Name: "c8"}
	ns, name := []byte(id.NS), []byte(id.Name)
	key := d.turnstileKey(id)
	const workers = 8
	conns := make([]*pgx.Conn, workers)
	for i := range conns {
		conns[i] = pgxConn(b, dsn)
	}
	loops := map[string]func(w int, call int64) error{
		"native": func(w int, _ int64) error {
			if _, err := conns[w].Exec(ctx, "SELECT pg_advisory_lock($1)", int64(8)); err != nil {
				return err
			}
			_, err := conns[w].Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(8))
			return err
		},
		"statements": func(w int, call int64) error {
			c, session := conns[w], fmt.Sprintf("s%d", w)
			var rid, token, inc *int64
			var held, waited bool
			if err := c.QueryRow(ctx, d.Q("turnstile_acquire"), id.Kind, ns, name, TurnstileClass, key, int32(60000), session, "c1", call).
				Scan(&rid, &token, &inc, &held, &waited); err != nil {
				return fmt.Errorf("turnstile_acquire: %w", err)
			}
			if rid == nil || !held {
				return fmt.Errorf("turnstile_acquire: granted %v, turnstile held %v; want both", rid != nil, held)
			}
			br := c.SendBatch(ctx, &pgx.Batch{QueuedQueries: []*pgx.QueuedQuery{
				{SQL: d.Q("release_inline_name"), Arguments: []any{session, id.Kind, ns, name, d.channel}},
				{SQL: "SELECT pg_advisory_unlock($1, $2)", Arguments: []any{TurnstileClass, key}},
			}})
			_, err := br.Exec()
			if err == nil {
				var ok bool
				if err = br.QueryRow().Scan(&ok); err == nil && !ok {
					err = fmt.Errorf("the turnstile was not held")
				}
			}
			if cerr := br.Close(); err == nil {
				err = cerr
			}
			return err
		},
	}
	// Turns of 200 acquisitions, shared by the workers.
	turns := make(map[string]func(first int64, n int) error, len(loops))
	for name, loop := range loops {
		turns[name] = func(_ int64, n int) error {
			contend(b, workers, n, loop)
			return nil
		}
	}
	batontest.InterleaveTurns(b, "acquisitions/s", []string{"native", "statements"}, 200, turns)
}

// contend runs n acquisitions of loop over workers goroutines.
func contend(b *testing.B, workers, n int, loop func(w int, call int64) error) {
	var next atomic.Int64
	batontest.Concurrently(b, workers, func(w int) error {
		for call := next.Add(1); call <= int64(n); call = next.Add(1) {
			if err := loop(w, call); err != nil {
				return err
			}
		}
		return nil
	})
}
