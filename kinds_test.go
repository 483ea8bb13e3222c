package baton_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

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
			slow: "ran longer than its timeout 50ms",
			sms:  `kind "sms"`,
			bad:  "do not decode",
		} {
			m := getMessage(t, c, id)
			if m.State != baton.StateDead || len(m.Errors) != 1 || !strings.Contains(m.Errors[0].Error, want) {
				t.Fatalf("message %d: %+v, want dead with %q", id, m, want)
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
