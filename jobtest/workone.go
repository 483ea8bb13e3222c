package jobtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// OneOptions qualify the job WorkOne runs and its worker.
type OneOptions struct {
	// Enqueue are the job's options, as the program enqueues it
	// (Priority, MaxAttempts, Timeout, Key...). Delay and RunAt are ignored: the job
	// runs now.
	Enqueue baton.EnqueueOptions
	// Worker are the worker's options (Middleware, Timeout, OnError,
	// Visibility...). WorkOne sets Drain, a Concurrency of 1 and no Kind.
	Worker baton.WorkerOptions
}

// Outcome is what became of the one attempt WorkOne ran.
type Outcome struct {
	// ID is the job's message id, in a queue of its own.
	ID int64
	// State is the message's state after the attempt: StateCompleted,
	// StateRetrying (it failed and has attempts left), StateDead (it
	// failed at its attempt limit, or with ErrPermanent) or
	// StateCancelled (it was cancelled while it ran).
	State baton.MessageState
	// Attempt is the attempt that ran, from 1.
	Attempt int
	// Err is the error the handler returned, through the middleware (nil
	// when it succeeded); after a panic, or a cancellation the handler
	// ignored, the error recorded on the message.
	Err error
	// Panicked: the handler (or a middleware) panicked; Failure.Stack
	// holds its stack.
	Panicked bool
	// Failure is the record the attempt left on the message (nil when it
	// succeeded): what OnError hooks and the dashboard see.
	Failure *baton.AttemptError
	// Duration is how long the handler ran, its middleware included.
	Duration time.Duration
	// Message is the message after the attempt (its errors, its run-at
	// when it is retrying, when it finished), as Client.Message reads it.
	// Its ID and State are zero for a completed message the history does
	// not keep (a negative Options.Retention.Completed).
	Message baton.MessageInfo
}

// oneQueues numbers the queues of WorkOne's jobs in this process.
var oneQueues atomic.Int64

// WorkOne enqueues args in a queue of its own and runs that one job,
// once, through the same worker runtime as Client.WorkJobs: the worker of
// its kind in ws, the middleware, the timeouts (the job's, its kind's,
// the worker's), the capture of panics, the settlement of the outcome
// (retry with backoff, dead letters, cancellation). It returns what
// became of the attempt; it fails the test if ws has no worker of args'
// kind, or the job cannot be enqueued, run or read back. A failing
// attempt does not fail the test: check the outcome. The job's queue
// (Outcome.Message.Queue) keeps the message afterwards, as a program's
// queue would; nothing works that queue but WorkOne.
//
//	out := jobtest.WorkOne(t, c, ws, Welcome{To: "bad"}, jobtest.OneOptions{Enqueue: baton.EnqueueOptions{MaxAttempts: 1}})
//	if out.State != baton.StateDead || !errors.Is(out.Err, ErrNoMailbox) { ... }
func WorkOne[T baton.JobArgs](tb testing.TB, c *baton.Client, ws *baton.Workers, args T, opts ...OneOptions) Outcome {
	tb.Helper()
	var o OneOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	kind := args.Kind()
	if ws == nil || !slices.Contains(ws.Kinds(), kind) {
		var kinds []string
		if ws != nil {
			kinds = ws.Kinds()
		}
		tb.Fatalf("jobtest: WorkOne: no worker of kind %q (workers: %v)", kind, kinds)
		return Outcome{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	queue := fmt.Sprintf("jobtest-one-%d-%d", time.Now().UnixNano(), oneQueues.Add(1))
	eo := o.Enqueue
	eo.Delay, eo.RunAt = 0, time.Time{}
	id, err := c.EnqueueJob(ctx, queue, args, eo)
	if err != nil {
		tb.Fatalf("jobtest: WorkOne: enqueue a job of kind %q: %v", kind, err)
		return Outcome{}
	}
	out, ran := runOne(ctx, c, queue, ws, o.Worker)
	if err := ran.err; err != nil {
		tb.Fatalf("jobtest: WorkOne: work message %d of kind %q: %v", id, kind, err)
		return Outcome{}
	}
	if !ran.ran {
		tb.Fatalf("jobtest: WorkOne: message %d of kind %q did not run", id, kind)
		return Outcome{}
	}
	out.ID = id
	m, err := c.Message(ctx, id)
	switch {
	case err == nil:
		out.Message, out.State = m, m.State
	case errors.Is(err, baton.ErrNotFound) && out.Failure == nil:
		out.State = baton.StateCompleted // not kept in the history
	default:
		tb.Fatalf("jobtest: WorkOne: read message %d of kind %q after its attempt: %v", id, kind, err)
	}
	return out
}

// oneRun is how WorkOne's worker went.
type oneRun struct {
	ran bool  // the handler was called
	err error // the worker's own error
}

// runOne runs the workers on queue until its one message has run once.
// The outermost middleware records the attempt and ends the worker as
// the handler returns: the worker settles the message (with contexts of
// its own) and claims nothing more, even a message retried at once.
func runOne(ctx context.Context, c *baton.Client, queue string, ws *baton.Workers, o baton.WorkerOptions) (Outcome, oneRun) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	var out Outcome
	var run oneRun
	record := func(next baton.Handler) baton.Handler {
		return func(hctx context.Context, m *baton.Message) (err error) {
			began := time.Now()
			returned := false
			defer func() {
				mu.Lock()
				run.ran = true
				out.Attempt, out.Duration, out.Err, out.Panicked = m.Attempt, time.Since(began), err, !returned
				mu.Unlock()
				stop()
			}()
			err = next(hctx, m)
			returned = true
			return err
		}
	}
	o.Middleware = append([]func(baton.Handler) baton.Handler{record}, o.Middleware...)
	hook := o.OnError
	o.OnError = func(m *baton.Message, e baton.AttemptError) {
		mu.Lock()
		out.Failure = &e
		if out.Err == nil {
			out.Err = errors.New(e.Error)
		}
		mu.Unlock()
		if hook != nil {
			hook(m, e)
		}
	}
	o.Drain, o.Concurrency, o.Kind = true, 1, ""
	run.err = c.WorkJobs(ctx, queue, ws, o)
	mu.Lock()
	defer mu.Unlock()
	return out, run
}
