package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/benchrec"
)

// EventsConfig configures RunEvents.
type EventsConfig struct {
	Backend string
	Server  string
	// Rows is how many rows are inserted for the consumption cases
	// (default 5000).
	Rows int
	// Workers is the concurrency of events_parallel (default 4).
	Workers int
	// Duration bounds each timed part (default 3s).
	Duration time.Duration
	// Progress, when set, is called with a case's name as it starts.
	Progress func(caseName string)
}

// EventCases are the events benchmark cases, in run order.
var EventCases = []string{"events_ordered", "events_parallel", "writer_overhead"}

// RunEvents measures table-change capture and consumption. Consumption is
// compared in the same run with seed 004's naive loop: select the unclaimed
// rows of an event log, then mark and delete each in its own transaction.
func RunEvents(ctx context.Context, cfg EventsConfig) ([]Record, error) {
	if !slices.Contains(Backends, cfg.Backend) {
		return nil, fmt.Errorf("bench: unknown backend %q (use sqlite, postgres or mysql)", cfg.Backend)
	}
	if cfg.Rows <= 0 {
		cfg.Rows = 5000
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
	}
	var out []Record
	var errs []error
	for _, name := range EventCases {
		if ctx.Err() != nil {
			break
		}
		if cfg.Progress != nil {
			cfg.Progress(name)
		}
		rec, err := runEventsCase(ctx, cfg, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s on %s: %w", name, cfg.Backend, err))
			continue
		}
		out = append(out, rec)
	}
	return out, errors.Join(errs...)
}

// rawDB opens the scratch database with plain database/sql, as an
// application would.
func rawDB(sc *scratch) (*sql.DB, error) {
	switch sc.backend {
	case "sqlite":
		return sql.Open("sqlite", "file:"+strings.TrimPrefix(sc.dsn, "sqlite://")+"?_busy_timeout=10000&_txlock=immediate&_journal_mode=WAL")
	case "postgres":
		return sql.Open("pgx", sc.dsn)
	}
	d, err := MySQLDriverDSN(sc.dsn)
	if err != nil {
		return nil, err
	}
	return sql.Open("mysql", d)
}

func bind(backend string, q string) string {
	if backend != "postgres" {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func createTable(ctx context.Context, db *sql.DB, backend, name string) error {
	ddl := map[string]string{
		"sqlite":   "CREATE TABLE %s (id INTEGER PRIMARY KEY, name TEXT, year_released INTEGER)",
		"postgres": "CREATE TABLE %s (id integer PRIMARY KEY, name text, year_released integer)",
		"mysql":    "CREATE TABLE %s (id INT PRIMARY KEY, name VARCHAR(20), year_released INT)",
	}[backend]
	_, err := db.ExecContext(ctx, fmt.Sprintf(ddl, name))
	return err
}

func insertRows(ctx context.Context, db *sql.DB, backend, table string, from, n int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	q := bind(backend, "INSERT INTO "+table+" (id, name, year_released) VALUES (?, ?, ?)")
	for i := from; i < from+n; i++ {
		if _, err := tx.ExecContext(ctx, q, i, "Dylan", i); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func runEventsCase(ctx context.Context, cfg EventsConfig, name string) (Record, error) {
	sc, err := newScratch(ctx, cfg.Backend, cfg.Server)
	if err != nil {
		return Record{}, err
	}
	defer sc.drop()
	c, err := baton.Open(ctx, sc.dsn, baton.Options{Name: "baton-bench"})
	if err != nil {
		return Record{}, err
	}
	defer c.Close()
	db, err := rawDB(sc)
	if err != nil {
		return Record{}, err
	}
	defer db.Close()
	if err := createTable(ctx, db, cfg.Backend, "languages"); err != nil {
		return Record{}, err
	}
	if name == "writer_overhead" {
		return writerOverhead(ctx, cfg, c, db)
	}
	if err := c.Subscribe(ctx, baton.Subscription{Name: "bell", Table: "languages", Actions: []baton.Action{baton.Insert}}); err != nil {
		return Record{}, err
	}
	if err := insertRows(ctx, db, cfg.Backend, "languages", 1, cfg.Rows); err != nil {
		return Record{}, err
	}
	opts := baton.WorkerOptions{Mode: baton.Ordered, Drain: true}
	if name == "events_parallel" {
		opts = baton.WorkerOptions{Concurrency: cfg.Workers, Drain: true}
	}
	// The bound only ends a drain that stalls: the drain returns once every
	// event is consumed, and a short Duration (the tests') must not cut
	// one that a loaded machine makes slow.
	wctx, cancel := context.WithTimeout(ctx, max(10*cfg.Duration, 30*time.Second))
	defer cancel()
	var n atomic.Int64
	start := time.Now()
	err = c.WorkEvents(wctx, "bell", func(context.Context, baton.Event, *baton.Message) error { n.Add(1); return nil }, opts)
	elapsed := time.Since(start)
	if err != nil {
		return Record{}, err
	}
	rec := benchrec.NewThroughputRecord(name, cfg.Backend, int(n.Load()), elapsed)
	naive, err := naiveLoop(ctx, db, cfg.Backend, cfg.Rows, 4*cfg.Duration)
	if err != nil {
		return rec, fmt.Errorf("naive loop: %w", err)
	}
	rec.WithThroughputBaseline("naive_loop", naive)
	return rec, nil
}

// naiveLoop is seed 004's single worker on an event log of n rows: select
// the unclaimed rows, then for each mark it and delete it, each in its own
// transaction. It returns events per second.
func naiveLoop(ctx context.Context, db *sql.DB, backend string, n int, bound time.Duration) (float64, error) {
	ddl := map[string]string{
		"sqlite":   "CREATE TABLE event_log (log_id INTEGER PRIMARY KEY, pk INTEGER, work_update INTEGER)",
		"postgres": "CREATE TABLE event_log (log_id bigserial PRIMARY KEY, pk integer, work_update bigint)",
		"mysql":    "CREATE TABLE event_log (log_id BIGINT AUTO_INCREMENT PRIMARY KEY, pk INT, work_update BIGINT)",
	}[backend]
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return 0, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	for i := 1; i <= n; i++ {
		if _, err := tx.ExecContext(ctx, bind(backend, "INSERT INTO event_log (pk) VALUES (?)"), i); err != nil {
			tx.Rollback()
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	start := time.Now()
	done := 0
	for time.Since(start) < bound {
		rows, err := db.QueryContext(ctx, "SELECT log_id FROM event_log WHERE work_update IS NULL")
		if err != nil {
			return 0, err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return 0, err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			if _, err := db.ExecContext(ctx, bind(backend, "UPDATE event_log SET work_update = 1 WHERE log_id = ?"), id); err != nil {
				return 0, err
			}
			if _, err := db.ExecContext(ctx, bind(backend, "DELETE FROM event_log WHERE log_id = ?"), id); err != nil {
				return 0, err
			}
			done++
			if time.Since(start) >= bound {
				break
			}
		}
	}
	return float64(done) / time.Since(start).Seconds(), nil
}

// writerOverhead compares the insert rate (one row per transaction) into a
// subscribed table with the rate into an identical table without a
// subscription, in the same run.
func writerOverhead(ctx context.Context, cfg EventsConfig, c *baton.Client, db *sql.DB) (Record, error) {
	if err := createTable(ctx, db, cfg.Backend, "plain"); err != nil {
		return Record{}, err
	}
	if err := c.Subscribe(ctx, baton.Subscription{Name: "bell", Table: "languages"}); err != nil {
		return Record{}, err
	}
	rate := func(table string) (int, time.Duration, error) {
		q := bind(cfg.Backend, "INSERT INTO "+table+" (id, name, year_released) VALUES (?, ?, ?)")
		start := time.Now()
		n := 0
		for time.Since(start) < cfg.Duration/2 {
			n++
			if _, err := db.ExecContext(ctx, q, n, "Dylan", n); err != nil {
				return 0, 0, err
			}
		}
		return n, time.Since(start), nil
	}
	n, el, err := rate("languages")
	if err != nil {
		return Record{}, err
	}
	bn, bel, err := rate("plain")
	if err != nil {
		return Record{}, err
	}
	rec := benchrec.NewThroughputRecord("writer_overhead", cfg.Backend, n, el)
	rec.WithThroughputBaseline("no_subscription", float64(bn)/bel.Seconds())
	return rec, nil
}
