package baton_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestRetryPolicyDefault: the zero policy waits attempt⁴ seconds ±20%,
// which over DefaultMaxAttempts is the documented horizon; Base or Max
// make the exponential policy of v0.1.0; Next replaces both.
func TestRetryPolicyDefault(t *testing.T) {
	var p baton.RetryPolicy
	for _, a := range []int{1, 2, 3, 5, 10, 24} {
		want := time.Duration(a*a*a*a) * time.Second
		for range 50 {
			if d := p.Delay(&baton.Message{Attempt: a}); d < want*8/10 || d > want*12/10 {
				t.Fatalf("attempt %d: %v, want %v ±20%%", a, d, want)
			}
		}
		if d := (baton.RetryPolicy{Jitter: -1}).Delay(&baton.Message{Attempt: a}); d != want {
			t.Fatalf("attempt %d without jitter: %v, want %v", a, d, want)
		}
	}
	// 20 days 9 h 43 min 40 s: the sum of n⁴ s for n from 1 to 24.
	if h := baton.RetryHorizon(p, baton.DefaultMaxAttempts); h != 1_763_020*time.Second || h.Hours() < 24*14 {
		t.Fatalf("horizon %v", h)
	}
	exp := baton.RetryPolicy{Base: time.Second, Jitter: -1}
	if d := exp.Delay(&baton.Message{Attempt: 3}); d != 4*time.Second {
		t.Fatalf("exponential attempt 3: %v", d)
	}
	if h := baton.RetryHorizon(exp, baton.DefaultMaxAttempts); h > 3*time.Hour {
		t.Fatalf("exponential horizon %v", h)
	}
	next := baton.RetryPolicy{Base: time.Second, Next: func(m *baton.Message) time.Duration { return time.Duration(m.Attempt) * time.Hour }}
	if d := next.Delay(&baton.Message{Attempt: 2}); d != 2*time.Hour {
		t.Fatalf("Next: %v", d)
	}
}

// runAtAfter checks that message id is due delay (±20%) after the call
// that began at before and ended at after, and returns its info.
func runAtAfter(t *testing.T, c *baton.Client, id int64, before, after time.Time, delay time.Duration) baton.MessageInfo {
	t.Helper()
	m := getMessage(t, c, id)
	lo, hi := before.Add(delay*8/10-time.Second), after.Add(delay*12/10+time.Second)
	if m.State != baton.StateRetrying || m.RunAt.Before(lo) || m.RunAt.After(hi) {
		t.Fatalf("message %d: %s, due %v after the retry, want %v ±20%%", id, m.State, m.RunAt.Sub(before), delay)
	}
	return m
}

// TestRetryDefaultScheduled: with the default policy, a message whose
// third attempt fails is due about 3⁴ = 81 s later (1 s doubling would
// say 4 s), as the database records it, by Session.Retry and RetryTx.
func TestRetryDefaultScheduled(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := b.NewDSN(t)
		c, db := openDSN(t, dsn), batontest.SQLDB(t, dsn)
		s := session(t, c)
		ctx := ctxT(t)
		a := enqueue(t, c, "rd", "a")
		bID := enqueue(t, c, "rd", "b")
		for attempt := 1; attempt <= 2; attempt++ {
			for _, m := range claim(t, s, "rd", baton.ClaimOptions{Max: 2}) {
				if err := s.RetryAfter(ctx, m, 0, errors.New("down")); err != nil {
					t.Fatal(err)
				}
			}
		}
		ms := claim(t, s, "rd", baton.ClaimOptions{Max: 2})
		if len(ms) != 2 || ms[0].Attempt != 3 || ms[1].Attempt != 3 {
			t.Fatalf("third claim: %d messages", len(ms))
		}
		before := time.Now()
		for _, m := range ms {
			if m.ID == a {
				if err := s.Retry(ctx, m, errors.New("still down")); err != nil {
					t.Fatal(err)
				}
				continue
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.RetryTx(ctx, tx, m, errors.New("still down")); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		after := time.Now()
		runAtAfter(t, c, a, before, after, 81*time.Second)
		runAtAfter(t, c, bID, before, after, 81*time.Second)
	})
}

type reportArgs struct {
	N int `json:"n"`
}

func (reportArgs) Kind() string { return "report" }

type pingArgs struct {
	N int `json:"n"`
}

func (pingArgs) Kind() string { return "ping" }

// TestRetryKindPolicy: a kind's policy (KindOptions.Retry) decides the
// wait after its failed attempts, whichever worker runs it; a kind
// without one keeps the client's.
func TestRetryKindPolicy(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b) // the client's policy: a few milliseconds
		ws := baton.NewWorkers()
		if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[reportArgs]) error {
			return errors.New("report service down")
		}, baton.KindOptions{Retry: baton.RetryPolicy{Next: func(m *baton.Message) time.Duration {
			return time.Hour + time.Duration(m.Attempt)*time.Minute
		}}}); err != nil {
			t.Fatal(err)
		}
		if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[pingArgs]) error {
			return errors.New("no answer")
		}); err != nil {
			t.Fatal(err)
		}
		report, err := c.EnqueueJob(ctxT(t), "kp", reportArgs{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		ping, err := c.EnqueueJob(ctxT(t), "kp", pingArgs{N: 1}, baton.EnqueueOptions{MaxAttempts: 2})
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		waitFor(t, "the ping to die", func() bool {
			if err := c.WorkJobs(ctxT(t), "kp", ws, baton.WorkerOptions{Drain: true}); err != nil {
				t.Fatal(err)
			}
			return getMessage(t, c, ping).State == baton.StateDead
		})
		m := runAtAfter(t, c, report, before, time.Now(), time.Hour+time.Minute)
		if m.Attempt != 1 {
			t.Fatalf("report: %d attempts", m.Attempt)
		}
		// A worker of one kind (WorkerOptions.Kind) uses it too.
		if err := c.RetryNow(ctxT(t), "kp", report); err != nil {
			t.Fatal(err)
		}
		before = time.Now()
		if err := c.WorkJobs(ctxT(t), "kp", ws, baton.WorkerOptions{Drain: true, Kind: "report"}); err != nil {
			t.Fatal(err)
		}
		if m := runAtAfter(t, c, report, before, time.Now(), time.Hour+2*time.Minute); m.Attempt != 2 {
			t.Fatalf("report: %d attempts", m.Attempt)
		}
	})
}

// mailJob is a kind with enqueue defaults.
type mailJob struct {
	To string `json:"to"`
}

func (mailJob) Kind() string { return "mail" }

func (m mailJob) JobDefaults() baton.JobDefaults {
	return baton.JobDefaults{Queue: "mailq", EnqueueOptions: baton.EnqueueOptions{Priority: 5, MaxAttempts: 7,
		UniqueKey: "mail:" + m.To, Timeout: time.Minute, Delay: time.Hour}}
}

// TestJobDefaults: a kind's enqueue defaults (JobArgsWithDefaults) fill
// in the queue and each option the call leaves zero; the call's own
// options override them field by field.
func TestJobDefaults(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		ctx := ctxT(t)
		id, err := c.EnqueueJob(ctx, "", mailJob{To: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		m := getMessage(t, c, id)
		if m.Queue != "mailq" || m.Priority != 5 || m.MaxAttempts != 7 || m.State != baton.StateScheduled || m.Kind != "mail" {
			t.Fatalf("with the defaults: %+v", m)
		}
		// The unique key is a default too.
		if dup, err := c.EnqueueJob(ctx, "", mailJob{To: "ann"}); !errors.Is(err, baton.ErrDuplicate) || dup != id {
			t.Fatalf("second enqueue: %d %v, want the holder %d and ErrDuplicate", dup, err, id)
		}
		// The call's options win, field by field.
		id2, err := c.EnqueueJob(ctx, "other", mailJob{To: "ann"}, baton.EnqueueOptions{Priority: 1, UniqueKey: "x", Delay: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		m = getMessage(t, c, id2)
		if m.Queue != "other" || m.Priority != 1 || m.MaxAttempts != 7 {
			t.Fatalf("with the call's options: %+v", m)
		}
		// In a transaction, and in a batch (JobMessage): the batch's queue
		// is the call's.
		tx, err := batontest.SQLDB(t, dsn).BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		id3, err := c.EnqueueJobTx(ctx, tx, "", mailJob{To: "bob"}, baton.EnqueueOptions{MaxAttempts: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if id3 != 0 {
			if m := getMessage(t, c, id3); m.Queue != "mailq" || m.MaxAttempts != 2 || m.Priority != 5 {
				t.Fatalf("in a transaction: %+v", m)
			}
		}
		nm, err := baton.JobMessage(mailJob{To: "cy"})
		if err != nil {
			t.Fatal(err)
		}
		ids, err := c.EnqueueMany(ctx, "batch", []baton.NewMessage{nm})
		if err != nil {
			t.Fatal(err)
		}
		if m := getMessage(t, c, ids[0]); m.Queue != "batch" || m.Priority != 5 || m.MaxAttempts != 7 {
			t.Fatalf("in a batch: %+v", m)
		}
		// A kind without defaults still needs a queue.
		if _, err := c.EnqueueJob(ctx, "", emailArgs{To: "x"}); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("no queue, no defaults: %v", err)
		}
	})
}

// mailV2 is the kind "mail" renamed.
type mailV2 struct {
	To string `json:"to"`
}

func (mailV2) Kind() string { return "mail.v2" }

// TestKindAliases: a renamed kind keeps its old name as an alias: the
// messages enqueued under the old name are claimed and run by the renamed
// worker, by a worker of the whole queue and by one of that kind alone,
// beside the messages of the new name.
func TestKindAliases(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		ws := baton.NewWorkers()
		var mu sync.Mutex
		var ran []string
		if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[mailV2]) error {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, j.Kind+":"+j.Args.To)
			return nil
		}, baton.KindOptions{Aliases: []string{"mail", "mail.v1"}}); err != nil {
			t.Fatal(err)
		}
		if got := ws.Kinds(); !slices.Equal(got, []string{"mail.v2"}) || !ws.Knows("mail") || ws.Knows("mail.v3") {
			t.Fatalf("kinds %v", got)
		}
		for _, q := range []string{"all", "one"} {
			mu.Lock()
			ran = nil
			mu.Unlock()
			var ids []int64
			for _, k := range []string{"mail", "mail.v1"} {
				p, _ := json.Marshal(mailV2{To: k})
				ids = append(ids, enqueue(t, c, q, string(p), baton.EnqueueOptions{Kind: k}))
			}
			id, err := c.EnqueueJob(ctx, q, mailV2{To: "new"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			// Another kind, which the one-kind worker leaves.
			other, err := c.EnqueueJob(ctx, q, emailArgs{To: "x"})
			if err != nil {
				t.Fatal(err)
			}
			o := baton.WorkerOptions{Drain: true, Concurrency: 2}
			if q == "one" {
				o.Kind = "mail.v2"
			}
			if err := c.WorkJobs(ctx, q, ws, o); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if m := getMessage(t, c, id); m.State != baton.StateCompleted {
					t.Fatalf("%s: message %d of kind %s: %s %s", q, id, m.Kind, m.State, m.LastError)
				}
			}
			mu.Lock()
			slices.Sort(ran)
			if want := []string{"mail.v1:mail.v1", "mail.v2:new", "mail:mail"}; !slices.Equal(ran, want) {
				t.Fatalf("%s: ran %v, want %v", q, ran, want)
			}
			mu.Unlock()
			if q == "one" {
				if m := getMessage(t, c, other); m.State != baton.StateReady {
					t.Fatalf("the other kind: %s", m.State)
				}
			}
		}
		// Aliases are checked: valid, and not another worker's name.
		if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[emailArgs]) error { return nil },
			baton.KindOptions{Aliases: []string{"mail"}}); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("an alias taken: %v", err)
		}
		if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[emailArgs]) error { return nil },
			baton.KindOptions{Aliases: []string{"no spaces"}}); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("an invalid alias: %v", err)
		}
		if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[emailArgs]) error { return nil }); err != nil {
			t.Fatalf("the kind after refused aliases: %v", err)
		}
	})
}

// TestUnknownKindRefused: with Options.Workers, enqueuing a kind that no
// worker of the set knows (as a kind or an alias) is refused, whatever
// the call, and nothing is enqueued, unless the options allow it; without
// Options.Workers any kind goes.
func TestUnknownKindRefused(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := b.NewDSN(t)
		ws := baton.NewWorkers()
		if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[mailV2]) error { return nil },
			baton.KindOptions{Aliases: []string{"mail"}}); err != nil {
			t.Fatal(err)
		}
		c := openDSN(t, dsn, baton.Options{Workers: ws})
		ctx := ctxT(t)
		refused := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, baton.ErrUnknownKind) || !errors.Is(err, baton.ErrInvalid) {
				t.Fatalf("%s: %v, want ErrUnknownKind and ErrInvalid", what, err)
			}
		}
		_, err := c.EnqueueJob(ctx, "u", invoiceArgs{N: 1})
		refused("EnqueueJob", err)
		_, err = c.Enqueue(ctx, "u", []byte("{}"), baton.EnqueueOptions{Kind: "invoice"})
		refused("Enqueue", err)
		nm, err := baton.JobMessage(invoiceArgs{N: 2})
		if err != nil {
			t.Fatal(err)
		}
		known, err := baton.JobMessage(mailV2{To: "a"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.EnqueueMany(ctx, "u", []baton.NewMessage{known, nm})
		refused("EnqueueMany", err)
		tx, err := batontest.SQLDB(t, dsn).BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.EnqueueJobTx(ctx, tx, "u", invoiceArgs{N: 3})
		refused("EnqueueJobTx", err)
		_ = tx.Rollback()
		if ms, _, err := c.ListMessages(ctx, baton.ListOptions{}); err != nil || len(ms) != 0 {
			t.Fatalf("after refusals: %d messages, %v", len(ms), err)
		}
		// Known kinds, aliases, untyped messages, and unknown kinds when
		// allowed, go.
		if _, err := c.EnqueueJob(ctx, "u", mailV2{To: "b"}); err != nil {
			t.Fatal(err)
		}
		enqueue(t, c, "u", "{}", baton.EnqueueOptions{Kind: "mail"})
		enqueue(t, c, "u", "untyped")
		if _, err := c.EnqueueJob(ctx, "u", invoiceArgs{N: 4}, baton.EnqueueOptions{AllowUnknownKind: true}); err != nil {
			t.Fatal(err)
		}
		// A schedule of an unknown kind is refused as well.
		sch := baton.Schedule{Name: "inv", Queue: "u", Every: time.Hour, Args: invoiceArgs{N: 6}}
		refused("AddSchedule", c.AddSchedule(sch))
		sch.Options.AllowUnknownKind = true
		if err := c.AddSchedule(sch); err != nil {
			t.Fatal(err)
		}
		c.RemoveSchedule("inv")
		// A worker added to the set later counts.
		if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[invoiceArgs]) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := c.EnqueueJob(ctx, "u", invoiceArgs{N: 5}); err != nil {
			t.Fatal(err)
		}
		// Without Options.Workers baton cannot know: any kind goes.
		if _, err := openDSN(t, dsn).EnqueueJob(ctx, "u", reportArgs{N: 1}); err != nil {
			t.Fatal(err)
		}
	})
}
