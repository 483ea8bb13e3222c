package baton_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

func subscribeJobs(t *testing.T, c *baton.Client, f baton.JobFilter) *baton.JobSubscription {
	t.Helper()
	s, err := c.SubscribeJobs(ctxT(t), f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func nextJobEvent(t *testing.T, s *baton.JobSubscription) baton.JobEvent {
	t.Helper()
	select {
	case ev, ok := <-s.C():
		if !ok {
			t.Fatal("the subscription's channel closed")
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no job event arrived")
	}
	return baton.JobEvent{}
}

// workUntil runs c's worker on queue with h in the background until the
// test ends.
func workUntil(t *testing.T, c *baton.Client, queue string, h baton.Handler) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Work(ctx, queue, h, baton.WorkerOptions{Concurrency: 4}); err != nil {
			t.Errorf("work: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// TestJobEventsAcrossClients: a subscriber receives the completed,
// failed, dead, cancelled and snoozed events of jobs another client (as
// another process would) settles, with their queue, kind, attempt and
// error; a CompleteTx rolled back sends nothing, one committed sends its
// completion once; filters keep their events only; Close stops delivery.
func TestJobEventsAcrossClients(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		c1 := openDSN(t, dsn)
		all := subscribeJobs(t, c1, baton.JobFilter{})
		flaky := subscribeJobs(t, c1, baton.JobFilter{Kinds: []string{"flaky"}, States: []baton.JobEventState{baton.JobCompleted}})
		other := subscribeJobs(t, c1, baton.JobFilter{Queues: []string{"other"}})
		c2 := openDSN(t, dsn, baton.Options{Retry: baton.RetryPolicy{Base: time.Millisecond, Max: time.Millisecond}})
		db := batontest.SQLDB(t, dsn)
		handler := func(ctx context.Context, m *baton.Message) error {
			switch m.Kind {
			case "flaky":
				if m.Attempt == 1 {
					return errors.New("flaky: not this time")
				}
			case "bad":
				return fmt.Errorf("bad input: %w", baton.ErrPermanent)
			case "stop":
				return baton.Cancel(errors.New("no longer wanted"))
			case "later":
				if len(m.Errors) == 0 {
					return baton.Snooze(0)
				}
			case "tx":
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				if err := c2.CompleteTx(ctx, tx, m); err != nil {
					_ = tx.Rollback()
					return err
				}
				if m.Attempt == 1 {
					_ = tx.Rollback()
					return errors.New("rolled back")
				}
				return tx.Commit()
			}
			return nil
		}
		workUntil(t, c2, "jobs", handler)
		kinds := []string{"ok", "flaky", "bad", "stop", "later", "tx"}
		want := map[string][]baton.JobEventState{
			"ok":    {baton.JobCompleted},
			"flaky": {baton.JobFailed, baton.JobCompleted},
			"bad":   {baton.JobDead},
			"stop":  {baton.JobCancelled},
			"later": {baton.JobSnoozed, baton.JobCompleted},
			"tx":    {baton.JobFailed, baton.JobCompleted},
		}
		ids := map[int64]string{}
		for _, k := range kinds {
			id, err := c2.Enqueue(ctxT(t), "jobs", []byte("{}"), baton.EnqueueOptions{Kind: k, MaxAttempts: 5})
			if err != nil {
				t.Fatal(err)
			}
			ids[id] = k
		}
		got := map[string][]baton.JobEventState{}
		byKind := map[string][]baton.JobEvent{}
		for n := 0; n < 9; n++ {
			ev := nextJobEvent(t, all)
			k, ok := ids[ev.ID]
			if !ok || ev.Queue != "jobs" || ev.Kind != k || ev.At.IsZero() {
				t.Fatalf("event %+v: not of a job enqueued (%v)", ev, ids)
			}
			t.Logf("event %+v", ev)
			got[k] = append(got[k], ev.State)
			byKind[k] = append(byKind[k], ev)
		}
		// A job's events from the caller's transaction (CompleteTx) may
		// overtake those the worker sends after its own commits.
		slices.Sort(got["tx"])
		slices.Sort(want["tx"])
		for k, w := range want {
			if !slices.Equal(got[k], w) {
				t.Errorf("%s: events %v, want %v", k, got[k], w)
			}
		}
		if f := byKind["flaky"]; len(f) == 2 && (f[0].Attempt != 1 || f[0].Error != "flaky: not this time" || f[1].Attempt != 2 || f[1].Error != "") {
			t.Errorf("flaky's events %+v", f)
		}
		if d := byKind["bad"]; len(d) == 1 && !strings.Contains(d[0].Error, "bad input") {
			t.Errorf("dead event %+v has not its error", d[0])
		}
		if d := byKind["stop"]; len(d) == 1 && !strings.Contains(d[0].Error, "no longer wanted") {
			t.Errorf("cancelled event %+v has not its error", d[0])
		}
		// A waiting job cancelled by id.
		wid, err := c2.Enqueue(ctxT(t), "idle", []byte("{}"), baton.EnqueueOptions{Kind: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if err := c2.CancelMessage(ctxT(t), wid); err != nil {
			t.Fatal(err)
		}
		if ev := nextJobEvent(t, all); ev.ID != wid || ev.Queue != "idle" || ev.Kind != "w" || ev.State != baton.JobCancelled {
			t.Fatalf("cancel of a waiting job: %+v", ev)
		}
		// One sender's events come in order: once the job of "other"
		// arrives, everything before it has.
		workUntil(t, c2, "other", func(context.Context, *baton.Message) error { return nil })
		oid, err := c2.Enqueue(ctxT(t), "other", []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if ev := nextJobEvent(t, other); ev.ID != oid || ev.Queue != "other" || ev.State != baton.JobCompleted {
			t.Fatalf("queue filter: first event %+v, want the completion of %d", ev, oid)
		}
		if ev := nextJobEvent(t, all); ev.ID != oid {
			t.Fatalf("after the jobs: %+v", ev)
		}
		if ev := nextJobEvent(t, flaky); ev.Kind != "flaky" || ev.State != baton.JobCompleted {
			t.Fatalf("kind and state filter: %+v", ev)
		}
		for _, s := range []*baton.JobSubscription{all, flaky, other} {
			if n := len(s.C()); n != 0 {
				t.Fatalf("%d events more than expected", n)
			}
		}
		// Close: the channel closes, nothing more comes.
		all.Close()
		if _, err := c2.Enqueue(ctxT(t), "other", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		nextJobEvent(t, other)
		if ev, ok := <-all.C(); ok {
			t.Fatalf("closed subscription delivered %+v", ev)
		}
		if all.Missed() != 0 || other.Missed() != 0 {
			t.Fatalf("missed %d, %d", all.Missed(), other.Missed())
		}
	})
}

// TestJobEventsSlowSubscriber: a subscriber that never reads does not
// slow the workers or the other subscribers down: what its buffer cannot
// hold is counted as missed.
func TestJobEventsSlowSubscriber(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		c1 := openDSN(t, dsn)
		slow := subscribeJobs(t, c1, baton.JobFilter{Buffer: 1})
		fast := subscribeJobs(t, c1, baton.JobFilter{})
		c2 := openDSN(t, dsn)
		const n = 50
		msgs := make([]baton.NewMessage, n)
		for i := range msgs {
			msgs[i] = baton.NewMessage{Payload: []byte("{}")}
		}
		if _, err := c2.EnqueueMany(ctxT(t), "jobs", msgs); err != nil {
			t.Fatal(err)
		}
		if err := c2.Work(ctxT(t), "jobs", func(context.Context, *baton.Message) error { return nil },
			baton.WorkerOptions{Concurrency: 4, Drain: true}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			nextJobEvent(t, fast)
		}
		if len(slow.C()) != 1 || slow.Missed() != n-1 {
			t.Fatalf("slow subscriber: %d buffered, %d missed; want 1 and %d", len(slow.C()), slow.Missed(), n-1)
		}
	})
}

// TestJobEventsLateSubscriber: a worker that runs before anyone
// subscribes starts sending events once a subscriber comes (its signal,
// or the periodic check), and a subscriber in the worker's own client
// receives them too.
func TestJobEventsLateSubscriber(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		c2 := openDSN(t, dsn)
		workUntil(t, c2, "jobs", func(context.Context, *baton.Message) error { return nil })
		if _, err := c2.Enqueue(ctxT(t), "jobs", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		c1 := openDSN(t, dsn)
		remote := subscribeJobs(t, c1, baton.JobFilter{})
		// Enqueue until an event arrives: when the worker hears of the
		// subscriber is not known.
		deadline := time.Now().Add(20 * time.Second)
		for got := false; !got; {
			if time.Now().After(deadline) {
				t.Fatal("no event reached the subscriber of another client")
			}
			if _, err := c2.Enqueue(ctxT(t), "jobs", []byte("{}")); err != nil {
				t.Fatal(err)
			}
			select {
			case <-remote.C():
				got = true
			case <-time.After(100 * time.Millisecond):
			}
		}
		local := subscribeJobs(t, c2, baton.JobFilter{})
		id, err := c2.Enqueue(ctxT(t), "jobs", []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		for ev := nextJobEvent(t, local); ev.ID != id; ev = nextJobEvent(t, local) {
		}
	})
}
