package drivertest

import (
	"testing"

	"github.com/batonhq/baton/driver"
)

// checkRollup: two processes' counts add up in the minute's row, every
// duration bucket its own column; a backlog sample marks the minute
// sampled, and a second one replaces the first.
func checkRollup(t *testing.T, tx driver.Tx) {
	ctx := testCtx(t)
	var a, b driver.Throughput
	a.Acked, a.Retried, a.Dead = 5, 2, 1
	for i := range a.Durations {
		a.Durations[i] = int64(i + 1)
	}
	b.Acked, b.Retried = 1, 1
	b.Durations[0], b.Durations[driver.DurationBuckets-1] = 10, 20
	must(t, tx.ThroughputAdd(ctx, "r", a))
	must(t, tx.ThroughputAdd(ctx, "r", b))
	n, err := tx.ThroughputSampled(ctx)
	must(t, err)
	failIf(t, n != 0, "ThroughputSampled before a sample: %d", n)
	must(t, tx.ThroughputBacklog(ctx, "r", 7, 8, 9))
	must(t, tx.ThroughputBacklog(ctx, "r", 4, 5, 6))
	n, err = tx.ThroughputSampled(ctx)
	must(t, err)
	failIf(t, n != 1, "ThroughputSampled after sampling one queue: %d", n)
	rows, now, err := tx.ThroughputHistory(ctx, "r", 2)
	must(t, err)
	// A minute may have turned between two statements: add up the rows.
	var got driver.RollupRow
	for _, r := range rows {
		failIf(t, r.Minute > now || r.Minute <= now-2, "row of minute %d, the current is %d", r.Minute, now)
		got.Add(&r.Throughput)
		if r.Sampled {
			got.Sampled, got.Ready, got.Scheduled, got.Retrying = true, r.Ready, r.Scheduled, r.Retrying
		}
	}
	want := a
	want.Add(&b)
	failIf(t, got.Throughput != want, "roll-up counts %+v, want %+v", got.Throughput, want)
	failIf(t, !got.Sampled || got.Ready != 4 || got.Scheduled != 5 || got.Retrying != 6,
		"backlog %+v, want the last sample 4, 5, 6", got)
	rows, _, err = tx.ThroughputHistory(ctx, "other", 60)
	must(t, err)
	failIf(t, len(rows) != 0, "another queue's history: %+v", rows)
	must(t, tx.ThroughputPurge(ctx))
	rows, _, err = tx.ThroughputHistory(ctx, "r", 2)
	must(t, err)
	failIf(t, len(rows) == 0, "the purge deleted the current minute")
}
