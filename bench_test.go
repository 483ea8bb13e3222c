package baton_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// BenchmarkLockPair measures uncontended Lock(write, timeout 0) + Release
// pairs on one session and one name, once per backend, each in a scratch
// database of its own. `baton bench locks` runs the same case side by side
// with the database's native lock; see docs/benchmarks.md.
func BenchmarkLockPair(b *testing.B) { benchLockRelease(b, "pairs/s", "pair") }

// BenchmarkMulti10 measures Lock(write, timeout 0) of 10 names of one
// namespace in one call + Release of the namespace, on one session, once
// per backend (`baton bench locks` case multi10, beside 10 native lock
// calls).
func BenchmarkMulti10(b *testing.B) {
	names := make([]string, 10)
	for i := range names {
		names[i] = fmt.Sprintf("multi.%d", i)
	}
	benchLockRelease(b, "calls/s", names...)
}

// benchLockRelease loops Lock(write, timeout 0) of names in one call and
// Release of their namespace on one session, once per backend, and
// reports the loops per second as metric.
func benchLockRelease(b *testing.B, metric string, names ...string) {
	for _, be := range batontest.All() {
		b.Run(be.Name, func(b *testing.B) {
			ctx, c := benchClient(b, be)
			s := session(b, c)
			for b.Loop() {
				if _, err := s.Lock(ctx, "bench", baton.Write, 0, names...); err != nil {
					b.Fatalf("lock: %v", err)
				}
				if n, err := s.Release(ctx, "bench"); err != nil || n != len(names) {
					b.Fatalf("release: released %d, %v; want %d", n, err, len(names))
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), metric)
		})
	}
}

// BenchmarkRefusedTry measures Lock(write, timeout 0) refused because
// another session holds the lock (a job that runs only where no other
// copy runs tries so), once per backend: alone, and beside 20,000 other
// locks the holder holds (the withdrawal of the refused call reads only
// the call's identifiers, not every lock row), and as the second of two
// names (names=2).
//
//	go test -run '^$' -bench RefusedTry -benchtime 2s .
func BenchmarkRefusedTry(b *testing.B) {
	for _, be := range batontest.All() {
		for _, others := range []int{0, 20000} {
			b.Run(fmt.Sprintf("%s/beside=%d", be.Name, others), func(b *testing.B) {
				benchRefusedTry(b, be, others, "held")
			})
		}
		// Two names, the second held: all or none, so refused too.
		b.Run(fmt.Sprintf("%s/names=2", be.Name), func(b *testing.B) {
			benchRefusedTry(b, be, 0, "free", "held")
		})
	}
}

// benchRefusedTry loops a try of names, of which "held" is another
// session's, beside others locks that session holds elsewhere.
func benchRefusedTry(b *testing.B, be batontest.Backend, others int, names ...string) {
	ctx, c := benchClient(b, be)
	holder := session(b, c)
	beside := make([]string, 100)
	for i := 0; i < others/len(beside); i++ {
		for j := range beside {
			beside[j] = fmt.Sprintf("n%d.%d", i, j)
		}
		if _, err := holder.Lock(ctx, "others", baton.Write, 0, beside...); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := holder.Lock(ctx, "bench", baton.Write, 0, "held"); err != nil {
		b.Fatal(err)
	}
	s := session(b, c)
	for b.Loop() {
		if _, err := s.Lock(ctx, "bench", baton.Write, 0, names...); !errors.Is(err, baton.ErrTimeout) {
			b.Fatalf("lock of a held name tried once: %v, want ErrTimeout", err)
		}
	}
	ls, err := c.Locks(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range ls {
		if l.Session == s.ID() {
			b.Fatalf("the refused tries left %+v, want nothing", l)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkReaderBesideReader measures Lock(read, forever) + Release of
// a name another session holds in read mode, on one session, once per
// backend: the grant of a reader beside readers and its release, the
// single-caller side of `baton bench locks`'s readers8.
//
//	go test -run '^$' -bench ReaderBesideReader -benchtime 2s .
func BenchmarkReaderBesideReader(b *testing.B) {
	for _, be := range batontest.All() {
		b.Run(be.Name, func(b *testing.B) {
			ctx, c := benchClient(b, be)
			holder := session(b, c)
			if _, err := holder.Lock(ctx, "bench", baton.Read, 0, "shared"); err != nil {
				b.Fatal(err)
			}
			s := session(b, c)
			for b.Loop() {
				if _, err := s.Lock(ctx, "bench", baton.Read, baton.Forever, "shared"); err != nil {
					b.Fatalf("lock: %v", err)
				}
				if n, err := s.Release(ctx, "bench"); err != nil || n != 1 {
					b.Fatalf("release: released %d, %v; want 1", n, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}

// BenchmarkHandoff measures the hand-off of a write lock between two
// clients of one process: from the holder's Release to the waiter's Lock
// returning, the waiter queued a millisecond before (ns/op is that span;
// p50-µs its median), once per backend. `baton bench locks` has the same
// case beside the native lock, over fewer rounds.
//
//	go test -run '^$' -bench Handoff -benchtime 1500x .
func BenchmarkHandoff(b *testing.B) {
	for _, be := range batontest.All() {
		b.Run(be.Label, func(b *testing.B) {
			ctx, c1, dsn := benchClientDSN(b, be)
			c2, err := baton.Open(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c2.Close() })
			s1, err1 := c1.NewSession(ctx)
			s2, err2 := c2.NewSession(ctx)
			if err1 != nil || err2 != nil {
				b.Fatal(err1, err2)
			}
			var spans []time.Duration
			for b.Loop() {
				spans = append(spans, handoff(ctx, b, s1, s2))
			}
			b.ReportMetric(median(spans), "p50-µs")
		})
	}
}

// handoff is one round of BenchmarkHandoff; only the hand-off is timed.
func handoff(ctx context.Context, b *testing.B, holder, waiter *baton.Session) time.Duration {
	b.StopTimer()
	if _, err := holder.Lock(ctx, "bench", baton.Write, 0, "h"); err != nil {
		b.Fatalf("holder: %v", err)
	}
	granted := make(chan time.Time, 1)
	go func() {
		if _, err := waiter.Lock(ctx, "bench", baton.Write, baton.Forever, "h"); err != nil {
			b.Errorf("waiter: %v", err)
		}
		granted <- time.Now()
	}()
	time.Sleep(time.Millisecond) // the waiter queues
	b.StartTimer()
	start := time.Now()
	if _, err := holder.Release(ctx, "bench"); err != nil {
		b.Fatalf("release: %v", err)
	}
	end := <-granted
	b.StopTimer()
	if _, err := waiter.Release(ctx, "bench"); err != nil {
		b.Fatalf("waiter release: %v", err)
	}
	b.StartTimer()
	return end.Sub(start)
}

// median is the middle of ds, in microseconds.
func median(ds []time.Duration) float64 {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds())
}

// BenchmarkEnqueueMany measures EnqueueMany of batches of 1,000 messages
// (one op is one batch; msgs/s reported), once per backend.
//
//	go test -run '^$' -bench EnqueueMany -benchtime 20x .
func BenchmarkEnqueueMany(b *testing.B) {
	for _, be := range batontest.All() {
		b.Run(be.Label, func(b *testing.B) {
			ctx, c := benchClient(b, be)
			batch := make([]baton.NewMessage, 1000)
			for i := range batch {
				batch[i] = baton.NewMessage{Payload: []byte(`{"n":1}`)}
			}
			start := time.Now()
			for b.Loop() {
				if _, err := c.EnqueueMany(ctx, "bench", batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(batch))/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkDrain measures a worker draining a backlog (one handler, the
// default prefetch), with completed messages kept in the history (the
// default) and without (a negative retention), once per backend.
func BenchmarkDrain(b *testing.B) {
	for _, be := range batontest.All() {
		for _, hist := range []struct {
			name string
			keep time.Duration
		}{{"history", 0}, {"no-history", -1}} {
			for _, workers := range []int{1, 2000} {
				b.Run(fmt.Sprintf("%s/%s/workers=%d", be.Label, hist.name, workers), func(b *testing.B) {
					benchDrain(b, be, hist.keep, workers)
				})
			}
		}
	}
}

// benchDrain drains a backlog of 5,000 messages (20,000 with 2,000
// workers) with a handler that does nothing, per iteration.
func benchDrain(b *testing.B, be batontest.Backend, keep time.Duration, workers int) {
	dsn := be.NewDSN(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := baton.Open(ctx, dsn, baton.Options{Retention: baton.Retention{Completed: keep}})
	if err != nil {
		b.Fatalf("open %s: %v", be.Name, err)
	}
	b.Cleanup(func() { _ = c.Close() })
	batch := make([]baton.NewMessage, 1000)
	for i := range batch {
		batch[i] = baton.NewMessage{Payload: []byte(`{"n":1}`)}
	}
	batches := 5
	if workers > 100 {
		batches = 20
	}
	var elapsed time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		for range batches {
			if _, err := c.EnqueueMany(ctx, "drain", batch); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		err := c.Work(ctx, "drain", func(context.Context, *baton.Message) error { return nil },
			baton.WorkerOptions{Drain: true, Concurrency: workers})
		if err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		n += batches * len(batch)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "msgs/s")
}

// BenchmarkEnqueueUnique measures single enqueues with a unique key (a new
// key each time) against plain enqueues, alternating in one client, once
// per backend; it reports both rates and their ratio (unique ÷ plain).
//
//	go test -run '^$' -bench EnqueueUnique -benchtime 2000x .
func BenchmarkEnqueueUnique(b *testing.B) {
	for _, be := range batontest.All() {
		b.Run(be.Label, func(b *testing.B) {
			ctx, c := benchClient(b, be)
			payload := []byte(`{"n":1}`)
			if _, err := c.Enqueue(ctx, "bench", payload); err != nil {
				b.Fatal(err)
			}
			var plain, unique time.Duration
			i := 0
			for b.Loop() {
				i++
				t0 := time.Now()
				if _, err := c.Enqueue(ctx, "bench", payload); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := c.Enqueue(ctx, "bench", payload, baton.EnqueueOptions{UniqueKey: fmt.Sprint("k", i)}); err != nil {
					b.Fatalf("unique enqueue: %v", err)
				}
				plain, unique = plain+t1.Sub(t0), unique+time.Since(t1)
			}
			b.ReportMetric(float64(b.N)/plain.Seconds(), "plain/s")
			b.ReportMetric(float64(b.N)/unique.Seconds(), "unique/s")
			b.ReportMetric(plain.Seconds()/unique.Seconds(), "ratio")
		})
	}
}

// benchClient opens a client on a scratch database of the backend, closed
// (before the database is dropped) when the benchmark ends, with a context
// for its calls.
func benchClient(b *testing.B, be batontest.Backend) (context.Context, *baton.Client) {
	b.Helper()
	ctx, c, _ := benchClientDSN(b, be)
	return ctx, c
}

// benchClientDSN is benchClient that also returns the scratch database's
// DSN.
func benchClientDSN(b *testing.B, be batontest.Backend) (context.Context, *baton.Client, string) {
	b.Helper()
	dsn := be.NewDSN(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	c, err := baton.Open(ctx, dsn)
	if err != nil {
		b.Fatalf("open %s: %v", be.Name, err)
	}
	// Registered after NewDSN's cleanup, so it runs before the scratch
	// database is dropped.
	b.Cleanup(func() { _ = c.Close() })
	return ctx, c, dsn
}

// BenchmarkLockTx measures a transaction that takes one write lock and
// commits, beside the same transaction around the database's own
// transaction-scoped lock: pg_advisory_xact_lock on PostgreSQL, a row's
// SELECT ... FOR UPDATE on MySQL/MariaDB (which have no transaction-level
// named lock), and the write lock itself on SQLite (a write that changes
// nothing); alone, and with a row update in the transaction. All report
// tx/s; docs/benchmarks.md has the ratios.
//
//	go test -run '^$' -bench LockTx -benchtime 3000x .
func BenchmarkLockTx(b *testing.B) {
	for _, be := range batontest.All() {
		b.Run(be.Label, func(b *testing.B) {
			ctx, c, dsn := benchClientDSN(b, be)
			db := batontest.SQLDB(b, dsn)
			native := map[string]string{
				"postgres": "SELECT pg_advisory_xact_lock(42)",
				"mysql":    "SELECT v FROM bench_native WHERE k = 1 FOR UPDATE",
				"sqlite":   "UPDATE bench_native SET v = v WHERE k < 0",
			}[be.Name]
			if _, err := db.ExecContext(ctx, "CREATE TABLE bench_native (k INTEGER PRIMARY KEY, v INTEGER)"); err != nil {
				b.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, "INSERT INTO bench_native (k, v) VALUES (1, 0), (2, 0)"); err != nil {
				b.Fatal(err)
			}
			run := func(b *testing.B, lock func(tx *sql.Tx) error) {
				for b.Loop() {
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := lock(tx); err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tx/s")
			}
			locks := map[string]func(tx *sql.Tx) error{
				"baton":  func(tx *sql.Tx) error { return c.LockTx(ctx, tx, "bench", baton.Write, 0, "pair") },
				"native": func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, native); return err },
			}
			// The lock alone, then with the row update a transaction that
			// locks is usually for (it makes the commit flush the log).
			for _, write := range []bool{false, true} {
				for _, name := range []string{"baton", "native"} {
					label := name
					if write {
						label += "+update"
					}
					b.Run(label, func(b *testing.B) {
						run(b, func(tx *sql.Tx) error {
							if err := locks[name](tx); err != nil || !write {
								return err
							}
							_, err := tx.ExecContext(ctx, "UPDATE bench_native SET v = v + 1 WHERE k = 2")
							return err
						})
					})
				}
			}
		})
	}
}
