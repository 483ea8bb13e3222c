package baton_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// BenchmarkLockPair measures uncontended Lock(write, timeout 0) + Release
// pairs on one session and one name, once per backend, each in a scratch
// database of its own. `baton bench locks` runs the same case side by side
// with the database's native lock; see docs/benchmarks.md.
func BenchmarkLockPair(b *testing.B) {
	for _, be := range batontest.All() {
		b.Run(be.Name, func(b *testing.B) {
			dsn := be.NewDSN(b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			c, err := baton.Open(ctx, dsn)
			if err != nil {
				b.Fatalf("open %s: %v", be.Name, err)
			}
			// Registered after NewDSN's cleanup, so it runs before the
			// scratch database is dropped.
			b.Cleanup(func() { _ = c.Close() })
			s, err := c.NewSession(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := s.Lock(ctx, "bench", baton.Write, 0, "pair"); err != nil {
					b.Fatalf("lock: %v", err)
				}
				if n, err := s.Release(ctx, "bench"); err != nil || n != 1 {
					b.Fatalf("release: released %d, %v", n, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}

// BenchmarkEnqueueMany measures EnqueueMany of batches of 1,000 messages
// (one op is one batch; msgs/s reported), once per backend.
//
//	go test -run '^$' -bench EnqueueMany -benchtime 20x .
func BenchmarkEnqueueMany(b *testing.B) {
	for _, be := range batontest.All() {
		b.Run(be.Label, func(b *testing.B) {
			dsn := be.NewDSN(b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			c, err := baton.Open(ctx, dsn)
			if err != nil {
				b.Fatalf("open %s: %v", be.Name, err)
			}
			b.Cleanup(func() { _ = c.Close() })
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
