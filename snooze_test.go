package baton_test

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
)

// TestSnoozeKeepsAttempt: a handler that returns Snooze (wrapped) puts its
// message off without using an attempt: the message is scheduled the
// delay from now (its run-at), its attempt taken back, the snooze in its
// errors and not in its last error, and the error hook is not called; its
// next run has the same attempt, and a message of one attempt snoozed
// twice completes.
func TestSnoozeKeepsAttempt(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		id := enqueue(t, c, "sz", "later", baton.EnqueueOptions{MaxAttempts: 1})
		var runs, hooks atomic.Int32
		var attempts []int
		handler := func(ctx context.Context, m *baton.Message) error {
			attempts = append(attempts, m.Attempt)
			switch runs.Add(1) {
			case 1:
				return fmt.Errorf("not yet: %w", baton.Snooze(time.Hour))
			case 2:
				if len(m.Errors) != 1 || !m.Errors[0].Snoozed || m.LastError != "" {
					t.Errorf("the run after a snooze sees %+v", m)
				}
				return baton.Snooze(0)
			}
			return nil
		}
		opts := baton.WorkerOptions{Drain: true, OnError: func(*baton.Message, baton.AttemptError) { hooks.Add(1) }}
		before := time.Now()
		if err := c.Work(ctxT(t), "sz", handler, opts); err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		m := getMessage(t, c, id)
		if m.State != baton.StateScheduled || m.Attempt != 0 || m.LastError != "" || len(m.Errors) != 1 {
			t.Fatalf("snoozed message: %+v, want scheduled, attempt 0, one snooze recorded", m)
		}
		e := m.Errors[0]
		if !e.Snoozed || e.Attempt != 1 || e.Error != "snoozed for 1h0m0s" || e.Stack != "" {
			t.Fatalf("the snooze's record: %+v", e)
		}
		// The database's clock: allow a few seconds of skew.
		if m.RunAt.Before(before.Add(time.Hour-5*time.Second)) || m.RunAt.After(after.Add(time.Hour+5*time.Second)) {
			t.Fatalf("snoozed for an hour from %v, due at %v", before, m.RunAt)
		}
		if err := c.RetryNow(ctxT(t), "sz", id); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the message to complete", func() bool {
			if err := c.Work(ctxT(t), "sz", handler, opts); err != nil {
				t.Fatal(err)
			}
			return getMessage(t, c, id).State == baton.StateCompleted
		})
		m = getMessage(t, c, id)
		if m.Attempt != 1 || len(m.Errors) != 2 || !m.Errors[1].Snoozed || m.Errors[1].Attempt != 1 {
			t.Fatalf("completed message: %+v, want attempt 1 and two snoozes", m)
		}
		if fmt.Sprint(attempts) != "[1 1 1]" || hooks.Load() != 0 {
			t.Fatalf("runs saw attempts %v (want [1 1 1]); error hook called %d times", attempts, hooks.Load())
		}
	})
}

// TestSnoozeDelay: a snoozed message does not run again before its
// delay: three snoozes of 200ms, then a completion, the attempt unchanged
// with an attempt limit of 2.
func TestSnoozeDelay(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		id := enqueue(t, c, "sd", "x", baton.EnqueueOptions{MaxAttempts: 2})
		const d = 200 * time.Millisecond
		var at []time.Time
		var attempts []int
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()
		done := make(chan error, 1)
		go func() {
			done <- c.Work(ctx, "sd", func(ctx context.Context, m *baton.Message) error {
				at, attempts = append(at, time.Now()), append(attempts, m.Attempt)
				if len(at) <= 3 {
					return baton.Snooze(d)
				}
				return nil
			}, baton.WorkerOptions{})
		}()
		awaitFinished(t, c, id)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		m := getMessage(t, c, id)
		if m.State != baton.StateCompleted || m.Attempt != 1 || len(m.Errors) != 3 || fmt.Sprint(attempts) != "[1 1 1 1]" {
			t.Fatalf("message snoozed three times: %+v, runs saw attempts %v", m, attempts)
		}
		for i := 1; i < len(at); i++ {
			// The database's clock decides; allow it a little skew.
			if gap := at[i].Sub(at[i-1]); gap < d-20*time.Millisecond {
				t.Fatalf("run %d came %v after a snooze of %v", i+1, gap, d)
			}
		}
	})
}

// TestSnoozeLostClaim: Session.Snooze is checked against the claim, in
// the same statement: a claim another session took over is ErrNotClaimed
// and leaves the message as it is; a message cancelled while claimed ends
// cancelled (ErrCancelled); a message that was never claimed, or a
// negative delay, is ErrInvalid.
func TestSnoozeLostClaim(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, other := openQPair(t, b)
		s, s2 := session(t, c), session(t, other)
		id := enqueue(t, c, "sl", "x")
		ms := claim(t, s, "sl", baton.ClaimOptions{Visibility: time.Second})
		if len(ms) != 1 {
			t.Fatalf("claimed %d", len(ms))
		}
		wantErr(t, s.Snooze(ctxT(t), ms[0], -time.Second), baton.ErrInvalid)
		wantErr(t, s.Snooze(ctxT(t), &baton.Message{ID: id, Queue: "sl"}, time.Second), baton.ErrInvalid)
		// The lease runs out; another session claims the message.
		taken, err := s2.Claim(ctxT(t), "sl", baton.ClaimOptions{Wait: 20 * time.Second, Visibility: time.Minute})
		if err != nil || len(taken) != 1 || taken[0].ID != id || taken[0].Attempt != 2 {
			t.Fatalf("the other session claimed %v, %v", taken, err)
		}
		wantErr(t, s.Snooze(ctxT(t), ms[0], time.Hour), baton.ErrNotClaimed)
		if m := getMessage(t, c, id); m.State != baton.StateRunning || m.Attempt != 2 || len(m.Errors) != 1 || m.Errors[0].Snoozed {
			t.Fatalf("after a stale snooze: %+v, want running under the other claim", m)
		}
		// Cancelled while claimed: it ends cancelled.
		if err := c.CancelMessage(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
		wantErr(t, s2.Snooze(ctxT(t), taken[0], time.Hour), baton.ErrCancelled)
		if m := getMessage(t, c, id); m.State != baton.StateCancelled {
			t.Fatalf("a cancelled claim snoozed: %+v, want cancelled", m)
		}
		// The session's own snooze gives the message back.
		id2 := enqueue(t, c, "sl", "y")
		ms = claim(t, s2, "sl", baton.ClaimOptions{})
		if len(ms) != 1 || ms[0].ID != id2 {
			t.Fatalf("claimed %v", ms)
		}
		if err := s2.Snooze(ctxT(t), ms[0], time.Hour); err != nil {
			t.Fatal(err)
		}
		wantErr(t, s2.Snooze(ctxT(t), ms[0], time.Hour), baton.ErrNotClaimed)
		if m := getMessage(t, c, id2); m.State != baton.StateScheduled || m.Attempt != 0 || len(m.Errors) != 1 {
			t.Fatalf("snoozed by its session: %+v", m)
		}
	})
}

// TestCancelFromHandler: a handler that returns Cancel (wrapped or not)
// ends its message cancelled at once, neither retried nor dead, with its
// error recorded; Cancel(nil) too.
func TestCancelFromHandler(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		withErr := enqueue(t, c, "ch", "bad input", baton.EnqueueOptions{MaxAttempts: 5})
		noErr := enqueue(t, c, "ch", "none", baton.EnqueueOptions{MaxAttempts: 5})
		var runs atomic.Int32
		err := c.Work(ctxT(t), "ch", func(ctx context.Context, m *baton.Message) error {
			runs.Add(1)
			if m.ID == withErr {
				return fmt.Errorf("handling: %w", baton.Cancel(errors.New("the input is malformed")))
			}
			return baton.Cancel(nil)
		}, baton.WorkerOptions{Drain: true})
		if err != nil {
			t.Fatal(err)
		}
		for id, want := range map[int64]string{withErr: "the input is malformed", noErr: "cancelled by its handler"} {
			m := getMessage(t, c, id)
			if m.State != baton.StateCancelled || m.Attempt != 1 || len(m.Errors) != 1 || !strings.Contains(m.Errors[0].Error, want) {
				t.Fatalf("message %d cancelled by its handler: %+v, want cancelled after one attempt with %q", id, m, want)
			}
		}
		if runs.Load() != 2 {
			t.Fatalf("%d runs, want 2", runs.Load())
		}
		if !errors.Is(baton.Cancel(nil), baton.ErrCancelled) {
			t.Fatal("Cancel(nil) is not ErrCancelled")
		}
	})
}

// TestKindsSnoozeAndCancel: a kind's typed worker (AddWorker) snoozes and
// cancels its jobs as a handler does.
func TestKindsSnoozeAndCancel(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ws := baton.NewWorkers()
		var mails atomic.Int32
		if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[emailArgs]) error {
			if mails.Add(1) == 1 {
				return baton.Snooze(time.Millisecond)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[invoiceArgs]) error {
			return baton.Cancel(fmt.Errorf("invoice %d is void", j.Args.N))
		}); err != nil {
			t.Fatal(err)
		}
		mail, err := c.EnqueueJob(ctxT(t), "kj", emailArgs{To: "ann@example.com"}, baton.EnqueueOptions{MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		inv, err := c.EnqueueJob(ctxT(t), "kj", invoiceArgs{N: 7}, baton.EnqueueOptions{MaxAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "both jobs to finish", func() bool {
			if err := c.WorkJobs(ctxT(t), "kj", ws, baton.WorkerOptions{Drain: true}); err != nil {
				t.Fatal(err)
			}
			return getMessage(t, c, mail).State == baton.StateCompleted && getMessage(t, c, inv).State == baton.StateCancelled
		})
		if m := getMessage(t, c, mail); m.Attempt != 1 || len(m.Errors) != 1 || !m.Errors[0].Snoozed {
			t.Fatalf("snoozed job: %+v", m)
		}
		if m := getMessage(t, c, inv); m.Attempt != 1 || len(m.Errors) != 1 || !strings.Contains(m.Errors[0].Error, "invoice 7 is void") {
			t.Fatalf("cancelled job: %+v", m)
		}
	})
}
