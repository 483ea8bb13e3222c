package jobtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
	"github.com/batonhq/baton/jobtest"
)

// task's handler does what Do says: "ok", "fail", "permanent", "panic",
// "slow" (outlasts its timeout) or "ignore" (ignores its timeout).
type task struct {
	Do string `json:"do"`
}

func (task) Kind() string { return "task" }

var errSMTP = errors.New("smtp down")

// taskWorkers are workers of task and welcome; ran counts the runs of
// task's handler and mail those of welcome's.
func taskWorkers(t *testing.T) (ws *baton.Workers, ran, mail *atomic.Int32) {
	t.Helper()
	ws, ran, mail = baton.NewWorkers(), new(atomic.Int32), new(atomic.Int32)
	err := errors.Join(
		baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[task]) error {
			ran.Add(1)
			switch j.Args.Do {
			case "fail":
				return errSMTP
			case "permanent":
				return fmt.Errorf("%w: no such mailbox", baton.ErrPermanent)
			case "panic":
				panic("boom")
			case "slow":
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}),
		baton.AddWorker(ws, func(context.Context, *baton.Job[welcome]) error {
			mail.Add(1)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return ws, ran, mail
}

// TestWorkOne: WorkOne runs the one job through the worker runtime and
// reports its outcome, leaving the other jobs alone, on every backend.
func TestWorkOne(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		ctx := context.Background()
		c := open(t, dsn)
		ws, ran, mail := taskWorkers(t)
		// Jobs of the program's queues stay where they are.
		if _, err := c.EnqueueJob(ctx, "mail", welcome{To: "ann"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.EnqueueJob(ctx, "mail", task{Do: "ok"}); err != nil {
			t.Fatal(err)
		}

		out := jobtest.WorkOne(t, c, ws, task{Do: "ok"})
		if out.State != baton.StateCompleted || out.Err != nil || out.Attempt != 1 || out.Failure != nil || out.Panicked ||
			out.Duration <= 0 || out.ID == 0 || out.Message.ID != out.ID {
			t.Errorf("a job that succeeds: %+v", out)
		}
		if n, m := ran.Load(), mail.Load(); n != 1 || m != 0 {
			t.Errorf("WorkOne ran %d tasks and %d welcomes, want 1 and 0", n, m)
		}
		jobtest.RequireManyEnqueued(t, c, "mail", welcome{To: "ann"})
		jobtest.RequireManyEnqueued(t, c, "mail", task{Do: "ok"})

		out = jobtest.WorkOne(t, c, ws, task{Do: "fail"})
		if out.State != baton.StateRetrying || !errors.Is(out.Err, errSMTP) || out.Attempt != 1 || out.Failure == nil ||
			out.Failure.Error != "smtp down" || !out.Message.RunAt.After(time.Now()) {
			t.Errorf("a job that fails with attempts left: %+v", out)
		}
		out = jobtest.WorkOne(t, c, ws, task{Do: "fail"}, jobtest.OneOptions{Enqueue: baton.EnqueueOptions{MaxAttempts: 1, Delay: time.Hour}})
		if out.State != baton.StateDead || !errors.Is(out.Err, errSMTP) || out.Message.FinishedAt.IsZero() {
			t.Errorf("a delayed job that fails at its attempt limit: %+v", out)
		}
		out = jobtest.WorkOne(t, c, ws, task{Do: "permanent"})
		if out.State != baton.StateDead || !errors.Is(out.Err, baton.ErrPermanent) {
			t.Errorf("a job that fails for good: %+v", out)
		}
		out = jobtest.WorkOne(t, c, ws, task{Do: "panic"})
		if out.State != baton.StateRetrying || !out.Panicked || out.Err == nil || !strings.Contains(out.Err.Error(), "boom") ||
			out.Failure == nil || !strings.Contains(out.Failure.Stack, "jobtest_test.taskWorkers") {
			t.Errorf("a job that panics: %+v", out)
		}
		out = jobtest.WorkOne(t, c, ws, task{Do: "slow"}, jobtest.OneOptions{Enqueue: baton.EnqueueOptions{Timeout: 50 * time.Millisecond}})
		if out.State != baton.StateRetrying || !errors.Is(out.Err, context.DeadlineExceeded) || out.Failure == nil ||
			!strings.Contains(out.Failure.Error, "timeout 50ms") {
			t.Errorf("a job that outlasts its timeout: %+v", out)
		}

		// The worker's options: middleware around the handler, the
		// program's error hook.
		var wrapped, hooked atomic.Int32
		mw := func(next baton.Handler) baton.Handler {
			return func(ctx context.Context, m *baton.Message) error {
				wrapped.Add(1)
				if err := next(ctx, m); err != nil {
					return fmt.Errorf("wrapped: %w", err)
				}
				return nil
			}
		}
		out = jobtest.WorkOne(t, c, ws, task{Do: "fail"}, jobtest.OneOptions{Worker: baton.WorkerOptions{
			Middleware: []func(baton.Handler) baton.Handler{mw},
			OnError:    func(*baton.Message, baton.AttemptError) { hooked.Add(1) }}})
		if !errors.Is(out.Err, errSMTP) || out.Err.Error() != "wrapped: smtp down" || wrapped.Load() != 1 || hooked.Load() != 1 {
			t.Errorf("middleware and hook: %+v, wrapped %d, hooked %d", out, wrapped.Load(), hooked.Load())
		}

		// A job cancelled while it runs.
		cws := baton.NewWorkers()
		if err := baton.AddWorker(cws, func(ctx context.Context, j *baton.Job[task]) error {
			if err := c.CancelMessage(ctx, j.ID); err != nil {
				return err
			}
			<-ctx.Done()
			return ctx.Err()
		}); err != nil {
			t.Fatal(err)
		}
		out = jobtest.WorkOne(t, c, cws, task{Do: "cancel"})
		if out.State != baton.StateCancelled || !errors.Is(out.Err, context.Canceled) || out.Failure == nil {
			t.Errorf("a job cancelled while it runs: %+v", out)
		}

		requireFails(t, "WorkOne of a kind without a worker", func(tb testing.TB) { jobtest.WorkOne(tb, c, ws, other{}) },
			`no worker of kind "other"`, "[task welcome]")
		requireFails(t, "WorkOne without workers", func(tb testing.TB) { jobtest.WorkOne(tb, c, nil, task{}) },
			`no worker of kind "task"`)
		requireFails(t, "WorkOne with a worker that cannot start", func(tb testing.TB) {
			jobtest.WorkOne(tb, c, ws, task{Do: "ok"}, jobtest.OneOptions{Worker: baton.WorkerOptions{Timeout: -1}})
		}, `work message`, "negative handler timeout")
		if n := ran.Load(); n != 7 {
			t.Errorf("the task handler ran %d times, want 7", n)
		}
	})
}

// TestWorkOneRunsOnce: a job retried at once is not run again.
func TestWorkOneRunsOnce(t *testing.T) {
	dsn := batontest.Selected(t)[0].NewDSN(t)
	c, err := baton.Open(context.Background(), dsn, baton.Options{Retry: baton.RetryPolicy{Max: time.Nanosecond, Jitter: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ws, ran, _ := taskWorkers(t)
	out := jobtest.WorkOne(t, c, ws, task{Do: "fail"})
	if n := ran.Load(); n != 1 || out.Attempt != 1 || out.State != baton.StateReady && out.State != baton.StateRetrying {
		t.Errorf("ran %d times: %+v", n, out)
	}
}
