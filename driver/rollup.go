package driver

// DurationBuckets is how many buckets the roll-up counts handler
// durations in (columns d0..d15 of queue_throughput); the bounds are the
// engine's (internal/queue).
const DurationBuckets = 16

// Throughput is what a process adds to a queue's roll-up row of a minute:
// messages acknowledged, retried and dead-lettered, and handler runs by
// duration bucket.
type Throughput struct {
	Acked, Retried, Dead int64
	Durations            [DurationBuckets]int64
}

// RollupRow is one minute of a queue's roll-up: the counts added by every
// process and the backlog sampled in the minute (Sampled false: none).
type RollupRow struct {
	// Minute is Unix minutes of the database's clock.
	Minute int64
	Throughput
	Sampled                    bool
	Ready, Scheduled, Retrying int64
}

// Add adds o's counts to t's.
func (t *Throughput) Add(o *Throughput) {
	t.Acked += o.Acked
	t.Retried += o.Retried
	t.Dead += o.Dead
	for i, n := range o.Durations {
		t.Durations[i] += n
	}
}
