package bench

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
	"github.com/batonhq/baton/internal/benchq"
)

// BenchmarkWakeLatency measures, over many more rounds than `baton bench
// queue`, the wake-up of an idle worker of another client (Enqueue to the
// handler's start; wake-p50-µs) and a notification's delivery to another
// client's Listener (Notify to receipt; notify-p50-µs), once per backend.
// One op is one round of each.
//
//	go test -run '^$' -bench WakeLatency -benchtime 600x ./cmd/baton/internal/bench
func BenchmarkWakeLatency(b *testing.B) {
	for _, be := range batontest.All() {
		b.Run(be.Label, func(b *testing.B) {
			dsn := be.NewDSN(b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			b.Cleanup(cancel)
			producer, err := baton.Open(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			// Registered after NewDSN's cleanup, so it runs before the
			// scratch database is dropped.
			b.Cleanup(func() { _ = producer.Close() })
			consumer, err := baton.Open(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = consumer.Close() })
			l, err := consumer.Listen(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(l.Close)
			b.ResetTimer()
			wake, _, err := benchq.EnqueueStartLatency(ctx, producer, consumer, "wake", b.N, time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			var notified []time.Duration
			for range b.N {
				start := time.Now()
				if err := producer.Notify(ctx, "bench", "x"); err != nil {
					b.Fatal(err)
				}
				<-l.C()
				notified = append(notified, time.Since(start))
				time.Sleep(2 * time.Millisecond) // apart, as the wake-ups are
			}
			b.ReportMetric(median(wake), "wake-p50-µs")
			b.ReportMetric(median(notified), "notify-p50-µs")
		})
	}
}

// median is the middle of ds, in microseconds.
func median(ds []time.Duration) float64 {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds())
}
