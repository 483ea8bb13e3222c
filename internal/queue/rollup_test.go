package queue

import (
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

// TestDurationBucket: a duration goes to the first bucket whose bound it
// does not pass; beyond the last bound, to the unbounded bucket.
func TestDurationBucket(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{0, 0}, {time.Millisecond, 0}, {time.Millisecond + 1, 1}, {3 * time.Millisecond, 2}, {300 * time.Millisecond, 8},
		{time.Second, 9}, {59 * time.Second, 14}, {time.Minute, 14}, {time.Hour, driver.DurationBuckets - 1}} {
		if got := DurationBucket(c.d); got != c.want {
			t.Errorf("DurationBucket(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

// TestPercentile: ranks interpolated inside their bucket; none counted
// is zero; the unbounded bucket answers its lower bound.
func TestPercentile(t *testing.T) {
	var b [driver.DurationBuckets]int64
	if got := Percentile(b, 0.5); got != 0 {
		t.Errorf("no runs: p50 %v", got)
	}
	b[0] = 4 // (0, 1ms]
	if got := Percentile(b, 0.5); got != 500*time.Microsecond {
		t.Errorf("4 runs up to 1 ms: p50 %v, want 500µs", got)
	}
	b[driver.DurationBuckets-1] = 4 // over a minute
	if got := Percentile(b, 0.99); got != time.Minute {
		t.Errorf("half over a minute: p99 %v, want 1m", got)
	}
	if got := Percentile(b, 0.5); got != time.Millisecond {
		t.Errorf("half up to 1 ms: p50 %v, want 1ms", got)
	}
}

// BenchmarkCountDuration: what a handler run adds to a worker's path (the
// roll-up's in-memory count), from parallel goroutines as a worker's
// handlers end.
func BenchmarkCountDuration(b *testing.B) {
	e := &Engine{finished: map[string]*driver.Throughput{}}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e.CountDuration("q", 3*time.Millisecond)
		}
	})
}
