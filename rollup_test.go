package baton_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// sumHistory adds up a history's counts.
func sumHistory(pts []baton.QueuePoint) (s baton.QueuePoint) {
	for _, p := range pts {
		s.Completed += p.Completed
		s.Retried += p.Retried
		s.Dead += p.Dead
		s.Handled += p.Handled
	}
	return s
}

// lastSampled is the last point of a history whose backlog was sampled.
func lastSampled(t *testing.T, pts []baton.QueuePoint) baton.QueuePoint {
	t.Helper()
	for i := len(pts) - 1; i >= 0; i-- {
		if pts[i].Sampled {
			return pts[i]
		}
	}
	t.Fatal("no point of the history has a backlog sample")
	return baton.QueuePoint{}
}

// TestQueueHistory: the roll-up counts what two processes completed,
// retried and dead-lettered; durations land in their buckets (the
// percentiles come out of them); handler runs of a worker are timed; the
// backlog sample shows ready, scheduled and retrying; the purge deletes
// rows older than a day and keeps the recent ones.
func TestQueueHistory(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		other := openDSN(t, dsn)
		ctx := ctxT(t)
		const n, m, k = 5, 3, 2
		for i := range n + m + k {
			attempts := 3
			if i >= n+m {
				attempts = 1
			}
			enqueue(t, c, "work", fmt.Sprint(i), baton.EnqueueOptions{MaxAttempts: attempts})
		}
		s := session(t, c)
		ms := claim(t, s, "work", baton.ClaimOptions{Max: n + m + k})
		if len(ms) != n+m+k {
			t.Fatalf("claimed %d messages, want %d", len(ms), n+m+k)
		}
		for i, msg := range ms {
			var err error
			switch {
			case i < n:
				err = s.Ack(ctx, msg)
			case i < n+m:
				err = s.RetryAfter(ctx, msg, time.Hour, errors.New("later"))
			default:
				err = s.Retry(ctx, msg, errors.New("no more"))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		// Another process completes two more.
		enqueue(t, other, "work", "a")
		enqueue(t, other, "work", "b")
		s2 := session(t, other)
		ack(t, s2, claim(t, s2, "work", baton.ClaimOptions{Max: 2})...)
		for _, cl := range []*baton.Client{c, other} {
			if err := baton.FlushRollup(ctx, cl); err != nil {
				t.Fatal(err)
			}
		}
		pts, err := c.QueueHistory(ctx, "work", baton.HistoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pts) != 60 || pts[59].At.After(time.Now()) || time.Since(pts[59].At) > 2*time.Minute {
			t.Fatalf("an hour's history has %d points, the last at %v", len(pts), pts[len(pts)-1].At)
		}
		if got := sumHistory(pts); got.Completed != n+2 || got.Retried != m || got.Dead != k {
			t.Fatalf("history counts %d completed, %d retried, %d dead; want %d, %d, %d",
				got.Completed, got.Retried, got.Dead, n+2, m, k)
		}

		// Durations: 10 runs of 3 ms (bucket 2-5 ms), 10 of 300 ms
		// (200-500 ms), in one flush so that one minute holds them.
		enqueue(t, c, "timed", "x")
		for range 10 {
			baton.CountDuration(c, "timed", 3*time.Millisecond)
			baton.CountDuration(c, "timed", 300*time.Millisecond)
		}
		if err := baton.FlushRollup(ctx, c); err != nil {
			t.Fatal(err)
		}
		pts, err = c.QueueHistory(ctx, "timed", baton.HistoryOptions{Span: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var timed baton.QueuePoint
		for _, p := range pts {
			if p.Handled > 0 {
				timed = p
			}
		}
		// p50: rank 10 ends the 2-5 ms bucket; p90: rank 18, 8 of 10 into
		// 200-500 ms; p99: rank 19.8.
		if timed.Handled != 20 || timed.P50 != 5*time.Millisecond || timed.P90 != 440*time.Millisecond || timed.P99 != 494*time.Millisecond {
			t.Fatalf("durations: %d runs, p50 %v p90 %v p99 %v; want 20, 5ms, 440ms, 494ms", timed.Handled, timed.P50, timed.P90, timed.P99)
		}

		// A worker's handler runs are timed.
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := c.Work(wctx, "timed", func(context.Context, *baton.Message) error { return nil }, baton.WorkerOptions{Drain: true}); err != nil {
			t.Fatal(err)
		}
		if err := baton.FlushRollup(ctx, c); err != nil {
			t.Fatal(err)
		}
		pts, err = c.QueueHistory(ctx, "timed", baton.HistoryOptions{Span: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if got := sumHistory(pts); got.Handled != 21 || got.Completed != 1 {
			t.Fatalf("after a worker ran one message: %d runs timed, %d completed; want 21, 1", got.Handled, got.Completed)
		}

		// Backlog: every step below only adds to the counts, so that the
		// largest sample of the minute is the last.
		enqueue(t, c, "backlog", "retrying", baton.EnqueueOptions{MaxAttempts: 3})
		r := claim(t, s, "backlog", baton.ClaimOptions{})
		if err := s.RetryAfter(ctx, r[0], time.Hour, errors.New("later")); err != nil {
			t.Fatal(err)
		}
		later := baton.EnqueueOptions{Delay: time.Hour}
		if _, err := c.EnqueueMany(ctx, "backlog", []baton.NewMessage{{Payload: []byte("r1")}, {Payload: []byte("r2")},
			{Payload: []byte("s1"), EnqueueOptions: later}, {Payload: []byte("s2"), EnqueueOptions: later},
			{Payload: []byte("s3"), EnqueueOptions: later}, {Payload: []byte("s4"), EnqueueOptions: later}}); err != nil {
			t.Fatal(err)
		}
		if err := baton.SampleBacklog(ctx, c); err != nil {
			t.Fatal(err)
		}
		pts, err = c.QueueHistory(ctx, "backlog", baton.HistoryOptions{Span: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if p := lastSampled(t, pts); p.Ready != 2 || p.Scheduled != 4 || p.Retrying != 1 {
			t.Fatalf("backlog sample: %d ready, %d scheduled, %d retrying; want 2, 4, 1", p.Ready, p.Scheduled, p.Retrying)
		}

		// The purge deletes rows over a day and an hour old, keeps the rest.
		db := batontest.SQLDB(t, dsn)
		old := time.Now().Add(-26*time.Hour).Unix() / 60
		mustExec(t, db, fmt.Sprintf("INSERT INTO baton_queue_throughput (queue, bucket, acked, dead) VALUES ('work', %d, 1, 0)", old))
		if err := baton.PurgeRollup(ctx, c); err != nil {
			t.Fatal(err)
		}
		var gone, kept int
		if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM baton_queue_throughput WHERE bucket <= %d", old)).Scan(&gone); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM baton_queue_throughput WHERE queue = 'work'").Scan(&kept); err != nil {
			t.Fatal(err)
		}
		if gone != 0 || kept == 0 {
			t.Fatalf("after the purge: %d rows over a day old, %d recent rows of work", gone, kept)
		}
	})
}

// TestQueueHistoryInvalid: spans and steps that are not whole minutes, a
// step that does not divide the span, a span over a day, and a queue that
// does not exist are refused.
func TestQueueHistoryInvalid(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		enqueue(t, c, "q", "x")
		for _, o := range []baton.HistoryOptions{{Span: 90 * time.Second}, {Span: 25 * time.Hour}, {Span: time.Hour, Step: 7 * time.Minute},
			{Step: 30 * time.Second}, {Span: -time.Hour}} {
			if _, err := c.QueueHistory(ctx, "q", o); !errors.Is(err, baton.ErrInvalid) || !strings.Contains(err.Error(), "history") {
				t.Errorf("%+v: %v, want ErrInvalid naming the history", o, err)
			}
		}
		if _, err := c.QueueHistory(ctx, "nope", baton.HistoryOptions{}); !errors.Is(err, baton.ErrUnknownQueue) {
			t.Errorf("unknown queue: %v, want ErrUnknownQueue", err)
		}
		pts, err := c.QueueHistory(ctx, "q", baton.HistoryOptions{Span: 24 * time.Hour, Step: 15 * time.Minute})
		if err != nil || len(pts) != 96 || pts[1].At.Sub(pts[0].At) != 15*time.Minute || pts[0].At.Minute()%15 != 0 {
			t.Errorf("a day in 15-minute points: %d points, %v", len(pts), err)
		}
	})
}
