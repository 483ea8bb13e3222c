// Package benchq runs baton's side of the queue benchmarks that `baton
// bench queue` and the peer benchmark modules (bench/river) share, so that
// both measure baton the same way. It uses the public API only.
package benchq

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
)

const (
	// latencyWarmup rounds are run first and not counted.
	latencyWarmup = 5
	// minRounds are always counted, however long they take.
	minRounds = 5
	// enqueueBatch is the EnqueueMany batch of the drain backlog.
	enqueueBatch = 1000
)

// Payload is a small JSON payload, as applications send.
func Payload(i int) []byte { return []byte(`{"n":` + strconv.Itoa(i) + `}`) }

// startedBound is how long a drain may take to handle its first message.
const startedBound = time.Minute

// Drain enqueues n messages to queue in batches of 1000 (EnqueueMany; not
// timed), then drains the queue with c.Work at the given concurrency and a
// handler that does nothing. It returns how many messages were handled and
// how long Work ran. A drain still running bound after its first message
// was handled is stopped there, gracefully. A drain that ends with
// messages left over (or unhandled) is an error.
func Drain(ctx context.Context, c *baton.Client, queue string, n, workers int, bound time.Duration) (int, time.Duration, error) {
	return DrainLimited(ctx, c, queue, n, workers, bound, baton.QueueLimits{})
}

// DrainLimited is Drain of a queue with limits l, set once the backlog is
// enqueued (the zero value: none).
func DrainLimited(ctx context.Context, c *baton.Client, queue string, n, workers int, bound time.Duration, l baton.QueueLimits) (int, time.Duration, error) {
	if err := EnqueueBacklog(ctx, c, queue, n); err != nil {
		return 0, 0, err
	}
	if !l.IsZero() {
		if err := c.SetQueueLimits(ctx, queue, l); err != nil {
			return 0, 0, err
		}
	}
	return DrainBacklog(ctx, c, queue, n, workers, bound)
}

// DrainBacklog drains a backlog of n messages as Drain says.
func DrainBacklog(ctx context.Context, c *baton.Client, queue string, n, workers int, bound time.Duration) (int, time.Duration, error) {
	var handled atomic.Int64
	// The bound runs from the first message handled, so that a worker
	// slow to start (a loaded machine) still drains some: a bound from
	// Work's start left drain_1 at 0 messages in 200 ms under a full test
	// run's load. startedBound stands in when none is ever handled.
	wctx, cancel := context.WithTimeout(ctx, bound+startedBound)
	defer cancel()
	var bounded sync.Once
	t0 := time.Now()
	err := c.Work(wctx, queue, func(context.Context, *baton.Message) error {
		handled.Add(1)
		bounded.Do(func() { time.AfterFunc(bound, cancel) })
		return nil
	}, baton.WorkerOptions{Concurrency: workers, Drain: true, Name: "baton-bench drain"})
	elapsed := time.Since(t0)
	if err != nil {
		return 0, 0, fmt.Errorf("work: %w", err)
	}
	if ctx.Err() != nil {
		return 0, 0, ctx.Err()
	}
	h := int(handled.Load())
	if wctx.Err() == nil {
		// Drained to the end: everything handled once, nothing left.
		if err := checkDrained(ctx, c, queue, n, h); err != nil {
			return 0, 0, err
		}
	}
	return h, elapsed, nil
}

// EnqueueBacklog enqueues n messages to queue in batches of 1000.
func EnqueueBacklog(ctx context.Context, c *baton.Client, queue string, n int) error {
	batch := make([]baton.NewMessage, 0, enqueueBatch)
	for i := 0; i < n; {
		batch = batch[:0]
		for ; i < n && len(batch) < enqueueBatch; i++ {
			batch = append(batch, baton.NewMessage{Payload: Payload(i)})
		}
		if _, err := c.EnqueueMany(ctx, queue, batch); err != nil {
			return fmt.Errorf("enqueue the backlog: %w", err)
		}
	}
	return nil
}

// checkDrained checks that a drain of n messages that handled h left
// nothing in the queue and handled each once.
func checkDrained(ctx context.Context, c *baton.Client, queue string, n, h int) error {
	st, err := c.Stats(ctx, queue)
	if err != nil {
		return err
	}
	if h != n || st.Unfinished()+st.Dead != 0 {
		return fmt.Errorf("drain of %d messages handled %d and left %+v", n, h, st)
	}
	return nil
}

// EnqueueStartLatency measures the time from calling Enqueue on producer
// to the start of the handler of consumer's Work (concurrency 1), which
// waits idle on an empty queue before each round: rounds rounds 10 ms
// apart, after 5 uncounted ones, stopping early after bound (at least 5
// counted). producer and consumer may be the same client. It returns each
// round's latency from the Enqueue call and from its return (the commit;
// negative when the handler started before Enqueue returned).
func EnqueueStartLatency(ctx context.Context, producer, consumer *baton.Client, queue string, rounds int, bound time.Duration) (fromCall, fromCommit []time.Duration, err error) {
	started := make(chan time.Time, 1)
	wctx, cancel := context.WithCancel(ctx)
	werr := make(chan error, 1)
	go func() {
		werr <- consumer.Work(wctx, queue, func(context.Context, *baton.Message) error {
			select {
			case started <- time.Now():
			default:
			}
			return nil
		}, baton.WorkerOptions{Name: "baton-bench idle consumer"})
	}()
	stop := func() error {
		cancel()
		return <-werr
	}
	var begin time.Time
	for i := 0; ; i++ {
		counted := i - latencyWarmup
		if counted == 0 {
			begin = time.Now()
		}
		if roundsDone(counted, rounds, begin, bound) {
			break
		}
		// The previous handler has returned; let its ack finish and the
		// consumer go back to waiting.
		time.Sleep(10 * time.Millisecond)
		t0 := time.Now()
		_, err := producer.Enqueue(ctx, queue, Payload(i))
		t1 := time.Now()
		if err != nil {
			_ = stop()
			return nil, nil, fmt.Errorf("enqueue: %w", err)
		}
		select {
		case at := <-started:
			if counted >= 0 {
				fromCall = append(fromCall, at.Sub(t0))
				fromCommit = append(fromCommit, at.Sub(t1))
			}
		case err := <-werr:
			cancel()
			return nil, nil, fmt.Errorf("consumer stopped: %v", err)
		case <-time.After(10 * time.Second):
			_ = stop()
			return nil, nil, fmt.Errorf("round %d: the handler did not start within 10s of the enqueue", i+1)
		}
	}
	if err := stop(); err != nil {
		return nil, nil, fmt.Errorf("work: %w", err)
	}
	return fromCall, fromCommit, nil
}

// roundsDone says whether a latency measure is done after counted
// rounds, of which the first began at begin.
func roundsDone(counted, rounds int, begin time.Time, bound time.Duration) bool {
	return counted >= rounds || (counted >= minRounds && time.Since(begin) >= bound)
}
