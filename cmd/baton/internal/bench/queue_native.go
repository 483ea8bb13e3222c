package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// skipLockedRaw is the PostgreSQL drain baseline: n rows in a table of
// their own in the scratch schema (dsn's search_path), drained by workers
// connections that each loop
//
//	DELETE FROM t WHERE id IN (SELECT id FROM t ORDER BY id LIMIT 100
//	FOR UPDATE SKIP LOCKED) RETURNING id
//
// (autocommit) until a statement deletes nothing, or bound passes. It
// returns the rows deleted and the time until the last worker stopped.
func skipLockedRaw(ctx context.Context, dsn string, n, workers int, bound time.Duration) (int, time.Duration, error) {
	if err := rawQueue(ctx, dsn, n); err != nil {
		return 0, 0, err
	}
	conns := make([]*pgx.Conn, workers)
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.Close(context.Background())
			}
		}
	}()
	for i := range conns {
		var err error
		if conns[i], err = pgx.Connect(ctx, dsn); err != nil {
			return 0, 0, err
		}
	}
	var (
		mu    sync.Mutex
		total int
		errs  []error
		wg    sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(bound)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine, err := rawDrain(ctx, c, end)
			mu.Lock()
			total += mine
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(errs) > 0 {
		return 0, 0, errs[0]
	}
	return total, elapsed, nil
}

// rawQueue creates the baseline's table with n rows.
func rawQueue(ctx context.Context, dsn string, n int) error {
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	for _, q := range []string{
		"CREATE TABLE raw_queue (id bigserial PRIMARY KEY, payload bytea NOT NULL)",
		`INSERT INTO raw_queue (payload) SELECT convert_to('{"n":' || g || '}', 'UTF8') FROM generate_series(1, $1) g`,
		"ANALYZE raw_queue",
	} {
		var args []any
		if q[0] == 'I' {
			args = []any{n}
		}
		if _, err := admin.Exec(ctx, q, args...); err != nil {
			return fmt.Errorf("%.40s: %w", q, err)
		}
	}
	return nil
}

// rawDrain deletes batches on one connection until one deletes nothing
// or end passes, and returns how many rows it deleted.
func rawDrain(ctx context.Context, c *pgx.Conn, end time.Time) (int, error) {
	const claim = "DELETE FROM raw_queue WHERE id IN (SELECT id FROM raw_queue ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED) RETURNING id"
	mine := 0
	for time.Now().Before(end) {
		rows, err := c.Query(ctx, claim)
		if err != nil {
			return mine, err
		}
		got := 0
		for rows.Next() {
			got++
		}
		rows.Close()
		if err := rows.Err(); err != nil || got == 0 {
			return mine, err
		}
		mine += got
	}
	return mine, nil
}
