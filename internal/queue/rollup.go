package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/maintain"
)

// The per-minute roll-up of each queue (queue_throughput): every process
// counts in memory what it finished, retried and how long its handlers
// ran, and its upkeep adds the counts to the minute's row (one statement
// per queue, never on the hot path); the upkeep also samples each queue's
// backlog once a minute.

// DurationBounds are the upper bounds of the roll-up's handler-duration
// buckets (1-2-5 steps); the last bucket holds the longer runs.
var DurationBounds = [driver.DurationBuckets - 1]time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute,
}

// DurationBucket is the bucket of a handler run of d.
func DurationBucket(d time.Duration) int {
	for i, b := range DurationBounds {
		if d <= b {
			return i
		}
	}
	return len(DurationBounds)
}

// counts is queue's unflushed counts; e.mu is held.
func (e *Engine) counts(queue string) *driver.Throughput {
	t := e.finished[queue]
	if t == nil {
		t = &driver.Throughput{}
		e.finished[queue] = t
	}
	return t
}

// CountFinished adds to this process's unflushed throughput counts.
func (e *Engine) CountFinished(queue string, acked, dead int64) {
	e.mu.Lock()
	t := e.counts(queue)
	t.Acked += acked
	t.Dead += dead
	e.mu.Unlock()
}

// countRetried counts a message given back for another attempt.
func (e *Engine) countRetried(queue string) {
	e.mu.Lock()
	e.counts(queue).Retried++
	e.mu.Unlock()
}

// CountDuration counts a handler run of d.
func (e *Engine) CountDuration(queue string, d time.Duration) {
	i := DurationBucket(d)
	e.mu.Lock()
	e.counts(queue).Durations[i]++
	e.mu.Unlock()
}

// FlushThroughput writes this process's counts since the last flush.
func (e *Engine) FlushThroughput(ctx context.Context) error {
	e.mu.Lock()
	pending := e.finished
	e.finished = map[string]*driver.Throughput{}
	e.mu.Unlock()
	var errs []error
	for q, t := range pending {
		if err := e.drv.NoTx().ThroughputAdd(ctx, q, *t); err != nil {
			e.mu.Lock()
			e.counts(q).Add(t) // next time
			e.mu.Unlock()
			errs = append(errs, fmt.Errorf("queue %s: %w", q, err))
		}
	}
	return errors.Join(errs...)
}

// SampleBacklog records every queue's backlog (ready, scheduled, retrying:
// Stats' counts, estimates beyond their bound) in the current minute's
// roll-up, unless another process did already this minute.
func (e *Engine) SampleBacklog(ctx context.Context) error {
	if n, err := e.drv.NoTx().ThroughputSampled(ctx); err != nil || n > 0 {
		return err
	}
	return e.SampleBacklogNow(ctx)
}

// SampleBacklogNow records every queue's backlog in the current minute's
// roll-up, replacing a sample taken earlier in the minute.
func (e *Engine) SampleBacklogNow(ctx context.Context) error {
	qs, err := e.Queues(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, q := range qs {
		st, err := e.Stats(ctx, q)
		if err == nil {
			err = e.drv.NoTx().ThroughputBacklog(ctx, q, st.Ready, st.Scheduled, st.Retrying)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("queue %s: %w", q, err))
		}
	}
	return errors.Join(errs...)
}

// BacklogService is the backlog sampler as a service: four looks a minute,
// so that no minute goes without a sample; one of them samples.
func (e *Engine) BacklogService(timeout time.Duration) maintain.Service {
	return maintain.Service{Name: "backlog sampler", Interval: 15 * time.Second, Timeout: timeout, Run: e.SampleBacklog}
}

// Point is a step of a queue's history: the counts of its minutes added
// up, the largest backlog sampled in them (Sampled: any).
type Point struct {
	At time.Time
	driver.Throughput
	Sampled                    bool
	Ready, Scheduled, Retrying int64
}

// History reads a queue's roll-up of the last span, in points of step
// (both whole minutes, step dividing span), oldest first. Points start
// at multiples of step since the Unix epoch; the last one holds the
// current minute.
func (e *Engine) History(ctx context.Context, queue string, span, step time.Duration) ([]Point, error) {
	n, per := int(span/step), int64(step/time.Minute)
	var now int64
	rows, err := inQueueTx(ctx, e, queue, func(tx driver.Tx) (rows []driver.RollupRow, err error) {
		rows, now, err = tx.ThroughputHistory(ctx, queue, int(span/time.Minute+step/time.Minute))
		return rows, err
	})
	if err != nil {
		return nil, err
	}
	if now == 0 {
		now = time.Now().Unix() / 60
	}
	first := (now/per - int64(n) + 1) * per // the first point's first minute
	out := make([]Point, n)
	for i := range out {
		out[i].At = time.Unix((first+int64(i)*per)*60, 0)
	}
	for _, r := range rows {
		i := (r.Minute - first) / per
		if r.Minute < first || i >= int64(n) {
			continue
		}
		p := &out[i]
		p.Add(&r.Throughput)
		if r.Sampled {
			p.Sampled = true
			p.Ready, p.Scheduled, p.Retrying = max(p.Ready, r.Ready), max(p.Scheduled, r.Scheduled), max(p.Retrying, r.Retrying)
		}
	}
	return out, nil
}

// Percentile estimates the q-quantile (0 < q <= 1) of the durations
// counted by bucket, interpolating linearly inside the bucket that holds
// it (the last, unbounded one answers its lower bound); 0 when none.
func Percentile(buckets [driver.DurationBuckets]int64, q float64) time.Duration {
	var total int64
	for _, n := range buckets {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var cum int64
	for i, n := range buckets {
		if n == 0 || float64(cum+n) < rank {
			cum += n
			continue
		}
		if i == len(DurationBounds) {
			return DurationBounds[i-1]
		}
		lo := time.Duration(0)
		if i > 0 {
			lo = DurationBounds[i-1]
		}
		return lo + time.Duration(float64(DurationBounds[i]-lo)*(rank-float64(cum))/float64(n))
	}
	return DurationBounds[len(DurationBounds)-1]
}
