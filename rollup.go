package baton

import (
	"context"
	"fmt"
	"time"

	mq "github.com/batonhq/baton/internal/queue"
)

// HistoryOptions choose the span and the points of Client.QueueHistory.
type HistoryOptions struct {
	// Span is how far back the history goes: whole minutes, at most 24
	// hours (default an hour).
	Span time.Duration
	// Step is the time each point covers: whole minutes dividing Span
	// (default a minute).
	Step time.Duration
}

// QueuePoint is one step of a queue's history, from the per-minute
// roll-up every client keeps: what finished in the step, the backlog, and
// the handler durations' percentiles.
type QueuePoint struct {
	// At is when the step starts (a multiple of the step since the Unix
	// epoch, UTC); the last point holds the current minute.
	At time.Time `json:"at"`
	// Completed, Retried and Dead count the messages acknowledged, given
	// back for another attempt and dead-lettered in the step, by every
	// process (settlements inside a caller's transaction, the ...Tx
	// calls, and lease recoveries are not counted).
	Completed int64 `json:"completed"`
	Retried   int64 `json:"retried"`
	Dead      int64 `json:"dead"`
	// Sampled: the backlog was sampled in the step; Ready, Scheduled and
	// Retrying are then the largest counts sampled in it (once a minute,
	// QueueStats' counts).
	Sampled   bool  `json:"sampled"`
	Ready     int64 `json:"ready"`
	Scheduled int64 `json:"scheduled"`
	Retrying  int64 `json:"retrying"`
	// Handled counts the handler runs of workers (Client.Work, baton
	// work) in the step; P50, P90 and P99 are their durations'
	// percentiles, estimated from buckets with 1-2-5 bounds from 1 ms to
	// 1 minute (interpolated inside a bucket; a run over a minute counts
	// as a minute).
	Handled int64         `json:"handled"`
	P50     time.Duration `json:"p50_ns"`
	P90     time.Duration `json:"p90_ns"`
	P99     time.Duration `json:"p99_ns"`
}

// QueueHistory returns a queue's history over o.Span in points of
// o.Step, oldest first, a point for every step (zero counts where nothing
// happened). Counts reach the database from each process's memory every
// ten heartbeats (and at Close), so the last minutes may still grow; the
// roll-up keeps a day.
func (c *Client) QueueHistory(ctx context.Context, queue string, o HistoryOptions) ([]QueuePoint, error) {
	if err := ValidateQueue(queue); err != nil {
		return nil, err
	}
	if o.Span == 0 {
		o.Span = time.Hour
	}
	if o.Step == 0 {
		o.Step = time.Minute
	}
	switch {
	case o.Span < time.Minute || o.Span > 24*time.Hour || o.Span%time.Minute != 0:
		return nil, fmt.Errorf("%w: history span %v: give whole minutes up to 24h", ErrInvalid, o.Span)
	case o.Step < time.Minute || o.Step%time.Minute != 0 || o.Span%o.Step != 0:
		return nil, fmt.Errorf("%w: history step %v: give whole minutes dividing the span %v", ErrInvalid, o.Step, o.Span)
	}
	pts, err := c.mq.History(ctx, queue, o.Span, o.Step)
	if err != nil {
		return nil, err
	}
	out := make([]QueuePoint, len(pts))
	for i, p := range pts {
		var handled int64
		for _, n := range p.Durations {
			handled += n
		}
		out[i] = QueuePoint{At: p.At.UTC(), Completed: p.Acked, Retried: p.Retried, Dead: p.Dead,
			Sampled: p.Sampled, Ready: p.Ready, Scheduled: p.Scheduled, Retrying: p.Retrying, Handled: handled,
			P50: mq.Percentile(p.Durations, 0.5), P90: mq.Percentile(p.Durations, 0.9), P99: mq.Percentile(p.Durations, 0.99)}
	}
	return out, nil
}
