package benchq

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton"
)

// BatchSize is how many messages make one batch of DrainBatches: 99 jobs
// and their callback.
const BatchSize = 100

// DrainBatches is Drain over a backlog of batches (EnqueueBatches; not
// timed). It measures what dependencies cost a drain beside Drain's plain
// backlog.
func DrainBatches(ctx context.Context, c *baton.Client, queue string, n, workers int, bound time.Duration) (int, time.Duration, error) {
	n, err := EnqueueBatches(ctx, c, queue, n)
	if err != nil {
		return 0, 0, err
	}
	return DrainBacklog(ctx, c, queue, n, workers, bound)
}

// EnqueueBatches enqueues n messages (rounded down to whole batches) to
// queue as batches (baton.Batch, one EnqueueWorkflow each): each of 99
// jobs and a callback after them all, the callback pending until its jobs
// finished. It returns how many it enqueued.
func EnqueueBatches(ctx context.Context, c *baton.Client, queue string, n int) (int, error) {
	n -= n % BatchSize
	if n == 0 {
		return 0, fmt.Errorf("a backlog of batches needs at least %d messages", BatchSize)
	}
	for b := 0; b < n/BatchSize; b++ {
		jobs := make([]baton.WorkflowStep, BatchSize-1)
		for i := range jobs {
			jobs[i] = baton.WorkflowStep{Name: strconv.Itoa(i), Queue: queue, Payload: Payload(b*BatchSize + i)}
		}
		cb := baton.WorkflowStep{Name: "callback", Queue: queue, Payload: Payload(b*BatchSize + BatchSize - 1)}
		if _, err := c.EnqueueWorkflow(ctx, baton.Batch(jobs, cb)); err != nil {
			return 0, fmt.Errorf("enqueue the batches: %w", err)
		}
	}
	return n, nil
}
