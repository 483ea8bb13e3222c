package baton_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// openQPair opens a queue client on a new database of b, and another
// client of the same database (with the default options), as a second
// process.
func openQPair(t *testing.T, b batontest.Backend) (c, other *baton.Client) {
	t.Helper()
	c, dsn := openQ(t, b)
	return c, openDSN(t, dsn)
}

func getMessage(t *testing.T, c *baton.Client, id int64) baton.MessageInfo {
	t.Helper()
	m, err := c.Message(ctxT(t), id)
	if err != nil {
		t.Fatalf("message %d: %v", id, err)
	}
	return m
}

// TestMessageLife: a message is found by id in every state of its life,
// with the error of every failed attempt (a panic's stack too), and the
// history lists finished messages by state.
func TestMessageLife(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ok := enqueue(t, c, "life", "ok", baton.EnqueueOptions{Kind: "mail"})
		dead := enqueue(t, c, "life", "dead", baton.EnqueueOptions{MaxAttempts: 2})
		later := enqueue(t, c, "life", "later", baton.EnqueueOptions{Delay: time.Hour})
		if m := getMessage(t, c, later); m.State != baton.StateScheduled || m.Kind != "" {
			t.Fatalf("delayed message: %+v", m)
		}
		handler := func(ctx context.Context, m *baton.Message) error {
			switch {
			case m.ID == ok && m.Attempt == 1:
				panic("first try")
			case m.ID == ok:
				if m.Kind != "mail" || len(m.Errors) != 1 || m.Errors[0].Error != "panic: first try" {
					t.Errorf("second attempt sees %+v", m)
				}
				return nil
			}
			return errors.New("no such user")
		}
		// A drain ends while a retry waits out its backoff: drain again.
		waitFor(t, "both messages to finish", func() bool {
			if err := c.Work(ctxT(t), "life", handler, baton.WorkerOptions{Drain: true}); err != nil {
				t.Fatal(err)
			}
			return getMessage(t, c, ok).State == baton.StateCompleted && getMessage(t, c, dead).State == baton.StateDead
		})
		m := getMessage(t, c, ok)
		if m.State != baton.StateCompleted || m.Attempt != 2 || m.Kind != "mail" || m.FinishedAt.IsZero() || len(m.Errors) != 1 ||
			m.Errors[0].Attempt != 1 || !strings.Contains(m.Errors[0].Stack, "goroutine") || m.Errors[0].At.IsZero() {
			t.Fatalf("completed message: %+v", m)
		}
		d := getMessage(t, c, dead)
		if d.State != baton.StateDead || len(d.Errors) != 2 || d.Errors[0].Error != "no such user" ||
			!strings.Contains(d.Errors[1].Error, "attempt limit 2 reached: no such user") {
			t.Fatalf("dead message: %+v", d)
		}
		dl, err := c.DeadLetters(ctxT(t), "life", 10)
		if err != nil || len(dl) != 1 || dl[0].ID != dead {
			t.Fatalf("dead letters: %+v %v", dl, err)
		}
		_, err = c.Message(ctxT(t), later+1000)
		wantErr(t, err, baton.ErrNotFound)

		// Every message, page by page, across states.
		var got []int64
		var states []baton.MessageState
		after := ""
		for pages := 0; pages < 10; pages++ {
			ms, next, err := c.ListMessages(ctxT(t), baton.ListOptions{Queue: "life", After: after, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				got, states = append(got, m.ID), append(states, m.State)
			}
			if after = next; next == "" {
				break
			}
		}
		if !slices.Equal(got, []int64{later, ok, dead}) ||
			!slices.Equal(states, []baton.MessageState{baton.StateScheduled, baton.StateCompleted, baton.StateDead}) {
			t.Fatalf("listed %v %v", got, states)
		}
		kinds, _, err := c.ListMessages(ctxT(t), baton.ListOptions{Kind: "mail"})
		if err != nil || len(kinds) != 1 || kinds[0].ID != ok {
			t.Fatalf("messages of kind mail: %+v %v", kinds, err)
		}
		_, _, err = c.ListMessages(ctxT(t), baton.ListOptions{State: "finished"})
		wantErr(t, err, baton.ErrInvalid)
	})
}

// TestCancel: a waiting message is cancelled at once and never runs; a
// running one has its handler's context cancelled with ErrCancelled by a
// client of another process, long before its lease would be renewed, and
// ends cancelled, not retried; cancelling a finished message changes
// nothing and says so.
func TestCancel(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, other := openQPair(t, b)
		waiting := enqueue(t, c, "cx", "waiting", baton.EnqueueOptions{Delay: time.Hour})
		if err := other.CancelMessage(ctxT(t), waiting); err != nil {
			t.Fatal(err)
		}
		if m := getMessage(t, c, waiting); m.State != baton.StateCancelled {
			t.Fatalf("cancelled waiting message: %+v", m)
		}
		running := enqueue(t, c, "cx", "running")
		causes, stop := blockedWorker(t, c, "cx", time.Minute)
		m := cancelRunning(t, other, c, running, causes, "the handler was not stopped (a lease renewal is 20s away)")
		if m.Attempt != 1 || len(m.Errors) != 1 || !strings.Contains(m.Errors[0].Error, "cancelled") {
			t.Fatalf("cancelled running message: %+v", m)
		}
		wantErr(t, other.CancelMessage(ctxT(t), running), baton.ErrFinished)
		wantErr(t, other.CancelMessage(ctxT(t), running+1000), baton.ErrNotFound)
		stop()
	})
}

// TestCancelIgnoredEndsCancelled: a running message is cancelled and its
// handler ignores its context and returns nil: the message ends cancelled
// all the same (DESIGN, Jobs: "whatever the handler returns"), its
// attempt's error saying so, and the observer counts it cancelled.
func TestCancelIgnoredEndsCancelled(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, other := openQPair(t, b)
		id := enqueue(t, c, "ci", "stubborn")
		stop := startedWorker(t, c, "ci", baton.WorkerOptions{}, func(ctx context.Context) error {
			<-ctx.Done() // told to stop, and returns nil all the same
			return nil
		})
		if err := other.CancelMessage(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
		m := awaitFinished(t, c, id)
		if m.State != baton.StateCancelled || m.Attempt != 1 || len(m.Errors) != 1 || !strings.Contains(m.Errors[0].Error, "cancelled") {
			t.Fatalf("a cancelled message whose handler returned nil: %+v, want cancelled with its attempt's error", m)
		}
		stop()
	})
}

// TestCancelUnheardEndsCancelled: a running message is cancelled and its
// handler returns nil before its process hears of the cancellation (its
// client misses the notification, and its claim is renewed only every
// 20 s): the acknowledgement refuses the cancelled claim and the message
// ends cancelled all the same, not completed. A session's own Ack of a
// cancelled claim says ErrCancelled and ends it cancelled.
func TestCancelUnheardEndsCancelled(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, other := openQPair(t, b)
		baton.LoseWakeUps(c, true)
		id := enqueue(t, c, "cu", "unheard")
		finish := make(chan struct{})
		stop := startedWorker(t, c, "cu", baton.WorkerOptions{Visibility: time.Minute}, func(ctx context.Context) error {
			<-finish
			if ctx.Err() != nil {
				t.Errorf("the handler heard of the cancellation: %v", context.Cause(ctx))
			}
			return nil
		})
		if err := other.CancelMessage(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
		close(finish)
		if m := awaitFinished(t, c, id); m.State != baton.StateCancelled {
			t.Fatalf("a message cancelled while its handler ran, which returned nil unaware: %+v, want cancelled", m)
		}
		stop()

		s := session(t, c)
		id = enqueue(t, c, "cu", "claimed")
		ms := claim(t, s, "cu", baton.ClaimOptions{})
		if err := other.CancelMessage(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
		wantErr(t, s.Ack(ctxT(t), ms[0]), baton.ErrCancelled)
		if m := getMessage(t, c, id); m.State != baton.StateCancelled {
			t.Fatalf("a claimed message cancelled, then acknowledged: %+v, want cancelled", m)
		}
	})
}

// blockedWorker runs a worker of c on queue whose handler waits for its
// context to end, and returns once the handler runs: with the channel of
// the cause its context ended with, and a function that stops the worker
// and fails the test if it did not return nil.
func blockedWorker(t *testing.T, c *baton.Client, queue string, visibility time.Duration) (<-chan error, func()) {
	t.Helper()
	causes := make(chan error, 1)
	stop := startedWorker(t, c, queue, baton.WorkerOptions{Visibility: visibility}, func(ctx context.Context) error {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	return causes, stop
}

// cancelRunning cancels message id through other while a blockedWorker
// of c runs it: the handler's context must end with ErrCancelled within
// 15 s (else the test fails saying stuck), and the message end
// cancelled, which cancelRunning returns.
func cancelRunning(t *testing.T, other, c *baton.Client, id int64, causes <-chan error, stuck string) baton.MessageInfo {
	t.Helper()
	if err := other.CancelMessage(ctxT(t), id); err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-causes:
		wantErr(t, cause, baton.ErrCancelled)
	case <-time.After(15 * time.Second):
		t.Fatal(stuck)
	}
	waitFor(t, "the message to end cancelled", func() bool { return getMessage(t, c, id).State == baton.StateCancelled })
	return getMessage(t, c, id)
}

// startedWorker runs a worker of c on queue whose handler is h, and
// returns once h runs, with a function that stops the worker and fails
// the test if it did not return nil.
func startedWorker(t *testing.T, c *baton.Client, queue string, opts baton.WorkerOptions, h func(ctx context.Context) error) func() {
	t.Helper()
	started := make(chan struct{})
	ctx, cancel := context.WithCancel(ctxT(t))
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() {
		done <- c.Work(ctx, queue, func(ctx context.Context, m *baton.Message) error {
			close(started)
			return h(ctx)
		}, opts)
	}()
	<-started
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// awaitFinished waits for message id to end cancelled or completed, and
// returns it.
func awaitFinished(t *testing.T, c *baton.Client, id int64) baton.MessageInfo {
	t.Helper()
	waitFor(t, "the message to finish", func() bool {
		st := getMessage(t, c, id).State
		return st == baton.StateCancelled || st == baton.StateCompleted
	})
	return getMessage(t, c, id)
}

// TestCancelLearnedAtRenewal: a cancellation is a wake-up too, and a hint
// (DESIGN, Notifications): a worker whose client loses it learns of the
// cancellation at its next claim renewal (every third of the visibility),
// which the cancelled claim refuses; its handler's context ends with
// ErrCancelled, and the message ends cancelled.
func TestCancelLearnedAtRenewal(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, other := openQPair(t, b)
		baton.LoseWakeUps(c, true)
		id := enqueue(t, c, "cr", "running")
		causes, stop := blockedWorker(t, c, "cr", 1500*time.Millisecond)
		cancelRunning(t, other, c, id, causes, "the handler was not stopped 15 s after the cancellation: its claim renewals (every 0.5 s) did not find out")
		stop()
	})
}

// TestHistoryRetention: completed messages are kept for the retention and
// then pruned; with a negative retention they are not kept at all.
func TestHistoryRetention(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := b.NewDSN(t)
		short := openDSN(t, dsn, baton.Options{Retention: baton.Retention{Completed: time.Millisecond}})
		none := openDSN(t, dsn, baton.Options{Retention: baton.Retention{Completed: -1}})
		kept := enqueue(t, short, "r", "kept")
		gone := enqueue(t, none, "r", "gone")
		s1, s2 := session(t, short), session(t, none)
		for _, x := range []struct {
			s  *baton.Session
			id int64
		}{{s1, kept}, {s2, gone}} {
			ms := claim(t, x.s, "r", baton.ClaimOptions{Max: 1})
			if len(ms) != 1 {
				t.Fatalf("claimed %d", len(ms))
			}
			if err := x.s.Ack(ctxT(t), ms[0]); err != nil {
				t.Fatal(err)
			}
		}
		_, err := short.Message(ctxT(t), gone)
		wantErr(t, err, baton.ErrNotFound)
		if m := getMessage(t, short, kept); m.State != baton.StateCompleted {
			t.Fatalf("kept: %+v", m)
		}
		waitFor(t, "the pruner to delete the completed message", func() bool {
			if err := baton.PruneHistory(ctxT(t), short); err != nil {
				t.Fatal(err)
			}
			_, err := short.Message(ctxT(t), kept)
			return errors.Is(err, baton.ErrNotFound)
		})
	})
}

// waitFor polls cond until it holds, failing the test after 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForSeen(t, what, func() (bool, string) { return cond(), "" })
}

// waitForSeen is waitFor for a condition that also describes what it saw,
// which a timeout reports (the last description, when there is one).
func waitForSeen(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if seen != "" {
				t.Fatalf("timed out waiting for %s (%s)", what, seen)
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type emailArgs struct {
	To string `json:"to"`
}

func (emailArgs) Kind() string { return "email" }

type invoiceArgs struct {
	N int `json:"n"`
}

func (invoiceArgs) Kind() string { return "invoice" }

type badKind struct{}

func (badKind) Kind() string { return "no spaces" }

// TestKinds: one worker per kind with typed arguments; a kind without a
// worker, and arguments that do not decode, fail the attempt with an error
// that says so; a kind's timeout bounds its handler; a worker can take
// one kind only.
func TestKinds(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ws := baton.NewWorkers()
		var mu sync.Mutex
		var got []string
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[emailArgs]) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, "mail "+j.Args.To)
			return nil
		}))
		must(baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[invoiceArgs]) error {
			if j.Args.N == 0 { // the slow one
				<-ctx.Done()
				return ctx.Err()
			}
			mu.Lock()
			defer mu.Unlock()
			got = append(got, "invoice "+j.Kind)
			return nil
		}, baton.KindOptions{Timeout: 50 * time.Millisecond}))
		wantErr(t, baton.AddWorker(ws, func(context.Context, *baton.Job[emailArgs]) error { return nil }), baton.ErrInvalid)
		wantErr(t, baton.AddWorker(ws, func(context.Context, *baton.Job[badKind]) error { return nil }), baton.ErrInvalid)
		if k := ws.Kinds(); strings.Join(k, ",") != "email,invoice" {
			t.Fatalf("kinds %v", k)
		}

		ctx := ctxT(t)
		mail, err := c.EnqueueJob(ctx, "jobs", emailArgs{To: "ann@example.com"})
		must(err)
		inv, err := c.EnqueueJob(ctx, "jobs", invoiceArgs{N: 7})
		must(err)
		slow, err := c.EnqueueJob(ctx, "jobs", invoiceArgs{}, baton.EnqueueOptions{MaxAttempts: 1})
		must(err)
		sms := enqueue(t, c, "jobs", `{}`, baton.EnqueueOptions{Kind: "sms", MaxAttempts: 1})
		bad := enqueue(t, c, "jobs", `{"n":"seven"}`, baton.EnqueueOptions{Kind: "invoice", MaxAttempts: 1})
		_, err = c.EnqueueJob(ctx, "jobs", badKind{})
		wantErr(t, err, baton.ErrInvalid)

		// A worker of one kind leaves the others alone.
		must(c.WorkJobs(ctx, "jobs", ws, baton.WorkerOptions{Kind: "email", Drain: true}))
		if getMessage(t, c, mail).State != baton.StateCompleted || getMessage(t, c, inv).State != baton.StateReady {
			t.Fatalf("a worker of kind email: mail %s, invoice %s", getMessage(t, c, mail).State, getMessage(t, c, inv).State)
		}
		must(c.WorkJobs(ctx, "jobs", ws, baton.WorkerOptions{Drain: true, Concurrency: 4}))
		if strings.Join(got, ";") != "mail ann@example.com;invoice invoice" {
			t.Fatalf("handled %v", got)
		}
		for id, want := range map[int64]string{
			slow: "context deadline exceeded: handler ran longer than its timeout 50ms",
			sms:  `kind "sms"`,
			bad:  "do not decode",
		} {
			m := getMessage(t, c, id)
			if m.State != baton.StateDead || len(m.Errors) != 1 || !strings.Contains(m.Errors[0].Error, want) {
				t.Fatalf("message %d: %+v, want dead with %q", id, m, want)
			}
			if n := strings.Count(m.Errors[0].Error, "deadline exceeded"); n > 1 {
				t.Fatalf("message %d: %q says deadline exceeded %d times", id, m.Errors[0].Error, n)
			}
		}
		err = c.WorkJobs(ctx, "jobs", ws, baton.WorkerOptions{Kind: "email", Mode: baton.Ordered})
		wantErr(t, err, baton.ErrInvalid)
		if err := c.WorkJobs(ctx, "jobs", nil, baton.WorkerOptions{}); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("nil workers: %v", err)
		}
	})
}

// TestWorkerHooks: middleware wraps the handler in order; the error hook
// sees every failed attempt, a panic with its stack; a panicking hook is
// logged, not fatal.
func TestWorkerHooks(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		boom := enqueue(t, c, "hooks", "boom", baton.EnqueueOptions{MaxAttempts: 1})
		fail := enqueue(t, c, "hooks", "fail", baton.EnqueueOptions{MaxAttempts: 1})
		enqueue(t, c, "hooks", "ok")
		var mu sync.Mutex
		var trail []string
		var hooked []baton.AttemptError
		mw := func(name string) func(baton.Handler) baton.Handler {
			return func(next baton.Handler) baton.Handler {
				return func(ctx context.Context, m *baton.Message) error {
					mu.Lock()
					trail = append(trail, name+":"+string(m.Payload))
					mu.Unlock()
					return next(ctx, m)
				}
			}
		}
		err := c.Work(ctxT(t), "hooks", func(ctx context.Context, m *baton.Message) error {
			switch string(m.Payload) {
			case "boom":
				panic("kaboom")
			case "fail":
				return errors.New("nope")
			}
			return nil
		}, baton.WorkerOptions{Drain: true, Middleware: []func(baton.Handler) baton.Handler{mw("outer"), mw("inner")},
			OnError: func(m *baton.Message, e baton.AttemptError) {
				mu.Lock()
				hooked = append(hooked, e)
				mu.Unlock()
				panic("a broken hook")
			}})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(trail, ",") != "outer:boom,inner:boom,outer:fail,inner:fail,outer:ok,inner:ok" {
			t.Fatalf("middleware trail %v", trail)
		}
		if len(hooked) != 2 || hooked[0].Error != "panic: kaboom" || !strings.Contains(hooked[0].Stack, "goroutine") ||
			hooked[1].Error != "nope" || hooked[1].Attempt != 1 {
			t.Fatalf("error hook saw %+v", hooked)
		}
		for _, id := range []int64{boom, fail} {
			if m := getMessage(t, c, id); m.State != baton.StateDead {
				t.Fatalf("message %d is %s", id, m.State)
			}
		}
	})
}

// TestRetryNowAndDelete: a waiting message can be made due at once or
// deleted; a running one cannot; unknown ids say so.
func TestRetryNowAndDelete(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		later := enqueue(t, c, "rn", "later", baton.EnqueueOptions{Delay: time.Hour})
		gone := enqueue(t, c, "rn", "gone")
		s := session(t, c)
		if err := c.DeleteMessage(ctx, "rn", gone); err != nil {
			t.Fatal(err)
		}
		wantErr(t, c.DeleteMessage(ctx, "rn", gone), baton.ErrNoMessage)
		if ms := claim(t, s, "rn", baton.ClaimOptions{Max: 10}); len(ms) != 0 {
			t.Fatalf("claimed %v before RetryNow", payloads(ms))
		}
		if err := c.RetryNow(ctx, "rn", later); err != nil {
			t.Fatal(err)
		}
		ms := claim(t, s, "rn", baton.ClaimOptions{Max: 10})
		if len(ms) != 1 || ms[0].ID != later {
			t.Fatalf("after RetryNow: %v", payloads(ms))
		}
		wantErr(t, c.RetryNow(ctx, "rn", later), baton.ErrRunning)
		wantErr(t, c.DeleteMessage(ctx, "rn", later), baton.ErrRunning)
		wantErr(t, c.RetryNow(ctx, "other", later), baton.ErrNoMessage)
		wantErr(t, c.RetryNow(ctx, "bad queue!", later), baton.ErrInvalid)
	})
}

// TestHandlerTimeouts: a message's timeout, or else the worker's, cancels
// its handler's context; the attempt fails and is retried; the error says
// why.
func TestHandlerTimeouts(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		enqueue(t, c, "to", "own", baton.EnqueueOptions{Timeout: 50 * time.Millisecond, MaxAttempts: 1})
		enqueue(t, c, "to", "worker's", baton.EnqueueOptions{MaxAttempts: 1})
		enqueue(t, c, "to", "quick", baton.EnqueueOptions{Timeout: time.Minute})
		var mu sync.Mutex
		budget := map[string]time.Duration{} // time left to the handler's deadline at its start
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- c.Work(wctx, "to", func(hctx context.Context, m *baton.Message) error {
				dl, ok := hctx.Deadline()
				mu.Lock()
				if ok {
					budget[string(m.Payload)] = time.Until(dl)
				}
				mu.Unlock()
				if string(m.Payload) != "quick" {
					<-hctx.Done() // runs until its timeout
				}
				return hctx.Err()
			}, baton.WorkerOptions{Timeout: 200 * time.Millisecond, Concurrency: 3})
		}()
		for deadline := time.Now().Add(20 * time.Second); ; {
			if st := stats(t, c, "to"); st.Dead == 2 && st.Unfinished() == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("stats %+v: want the two slow messages dead and the quick one done", stats(t, c, "to"))
			}
			time.Sleep(20 * time.Millisecond)
		}
		stop()
		<-done
		dead, err := c.DeadLetters(ctx, "to", 10)
		if err != nil || len(dead) != 2 {
			t.Fatalf("dead letters %v %v", dead, err)
		}
		for _, d := range dead {
			if !strings.Contains(d.Error, "deadline exceeded") {
				t.Errorf("dead letter %s: error %q does not say the deadline passed", d.Payload, d.Error)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		// Which timeout each handler got: never more than its own.
		if b := budget["own"]; b <= 0 || b > 50*time.Millisecond {
			t.Errorf("a message with a 50ms timeout had %v", b)
		}
		if b := budget["worker's"]; b <= 0 || b > 200*time.Millisecond {
			t.Errorf("a message under the worker's 200ms timeout had %v", b)
		}
		if b := budget["quick"]; b <= 200*time.Millisecond {
			t.Errorf("a message with a 1 min timeout had %v: the worker's overrode it", b)
		}
		_, err = c.Enqueue(ctx, "to", []byte("x"), baton.EnqueueOptions{Timeout: time.Microsecond})
		wantErr(t, err, baton.ErrInvalid)
	})
}
