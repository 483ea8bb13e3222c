// Command reentercost measures a re-entered user-level lock on
// MySQL/MariaDB operation by operation: one session takes a name twice
// (GetLock) and releases it one instance at a time (ReleaseLock twice),
// and for each of the four operations it reports the mean time and the
// client statements the server served for it (Questions, less the status
// query's own; a procedure call counts one), with the redo log writes and
// fsyncs. It works in a scratch database of its own on the DSN's server,
// dropped at the end. Nothing else should run against the server
// meanwhile (docs/benchmarks.md, "Scripts"); `baton bench locks --case
// reenter` gives the whole cycle against GET_LOCK:
//
//	go run ./scripts/reentercost -dsn mysql://root@127.0.0.1:3306/test -cycles 300
//	go run ./scripts/reentercost -dsn mysql://root@127.0.0.1:3306/test -timeout 0
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/scripts/internal/scratch"
)

var counters = []string{"Questions", "Innodb_log_writes", "Innodb_data_fsyncs"}

func main() {
	dsn := flag.String("dsn", "", "the database (mysql://)")
	cycles := flag.Int("cycles", 300, "cycles timed, and cycles counted")
	timeout := flag.Duration("timeout", time.Second, "GetLock's timeout (0: try once, as bench locks' reenter case)")
	flag.Parse()
	ctx := context.Background()
	db, target, drop := scratch.MySQL(*dsn, "reentercost")
	defer db.Close()
	defer drop()
	c, err := baton.Open(ctx, target)
	if err != nil {
		log.Print(err)
		return
	}
	defer c.Close()
	s, err := c.NewSession(ctx)
	if err != nil {
		log.Print(err)
		return
	}
	ops := []op{
		{"first GetLock", func() error { return get(ctx, s, *timeout) }},
		{"second GetLock (re-entry)", func() error { return get(ctx, s, *timeout) }},
		{"first ReleaseLock (one of two)", func() error { return release(ctx, s) }},
		{"last ReleaseLock", func() error { return release(ctx, s) }},
	}
	for range 50 { // warm-up
		cycle(ops, func(_ int, run func() error) error { return run() })
	}
	took := timed(ops, *cycles)
	counted := counts(ops, *cycles, db)
	n := float64(*cycles)
	for i, op := range ops {
		fmt.Printf("%-32s %8.0f µs  statements %.2f  redo writes %.2f  fsyncs %.2f\n", op.name,
			float64(took[i].Microseconds())/n, float64(counted[i]["Questions"])/n,
			float64(counted[i]["Innodb_log_writes"])/n, float64(counted[i]["Innodb_data_fsyncs"])/n)
	}
}

// op is one of the four operations of a cycle.
type op struct {
	name string
	run  func() error
}

// cycle runs each operation once through each; a failure panics (so that
// the deferred drops run).
func cycle(ops []op, each func(i int, run func() error) error) {
	for i, op := range ops {
		if err := each(i, op.run); err != nil {
			log.Panicf("%s: %v", op.name, err)
		}
	}
}

// timed is each operation's total time over n cycles.
func timed(ops []op, n int) []time.Duration {
	took := make([]time.Duration, len(ops))
	for range n {
		cycle(ops, func(i int, run func() error) error {
			start := time.Now()
			err := run()
			took[i] += time.Since(start)
			return err
		})
	}
	return took
}

// counts is each operation's server counters over n cycles.
func counts(ops []op, n int, db *sql.DB) []map[string]int64 {
	counted := make([]map[string]int64, len(ops))
	for i := range counted {
		counted[i] = map[string]int64{}
	}
	for range n {
		cycle(ops, func(i int, run func() error) error {
			before := scratch.Status(db, counters...)
			if err := run(); err != nil {
				return err
			}
			after := scratch.Status(db, counters...)
			for _, k := range counters {
				counted[i][k] += after[k] - before[k]
			}
			counted[i]["Questions"]-- // the status query's own
			return nil
		})
	}
	return counted
}

func get(ctx context.Context, s *baton.Session, timeout time.Duration) error {
	ok, err := s.GetLock(ctx, "reentercost", timeout)
	if err == nil && !ok {
		err = fmt.Errorf("not granted within %v", timeout)
	}
	return err
}

func release(ctx context.Context, s *baton.Session) error {
	r, err := s.ReleaseLock(ctx, "reentercost")
	if err == nil && r != baton.Released {
		err = fmt.Errorf("%v, want Released", r)
	}
	return err
}
