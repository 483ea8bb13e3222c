package baton_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// wantJobEvent takes the next event of s and checks it is id's in state,
// with attempt, and an error that contains errText.
func wantJobEvent(t *testing.T, s *baton.JobSubscription, id int64, queue string, st baton.JobEventState, attempt int, errText string) baton.JobEvent {
	t.Helper()
	ev := nextJobEvent(t, s)
	if ev.ID != id || ev.Queue != queue || ev.State != st || ev.Attempt != attempt || !strings.Contains(ev.Error, errText) {
		t.Fatalf("event %+v, want message %d of %s %s at attempt %d with error %q", ev, id, queue, st, attempt, errText)
	}
	return ev
}

// TestJobEventsInCallerTx: RetryTx sends failed (a retry), dead (at the
// attempt limit) or cancelled (cancelled while it ran), and
// CancelMessageTx of a waiting job cancelled, each with the caller's
// commit and never for a rollback.
func TestJobEventsInCallerTx(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		sub := subscribeJobs(t, c, baton.JobFilter{})
		db, ctx := batontest.SQLDB(t, dsn), ctxT(t)
		s := session(t, c)
		one := func(o baton.EnqueueOptions) *baton.Message {
			t.Helper()
			id := enqueue(t, c, "rt", "{}", o)
			ms := claim(t, s, "rt", baton.ClaimOptions{})
			if len(ms) != 1 || ms[0].ID != id {
				t.Fatalf("claimed %v, want message %d", ms, id)
			}
			return ms[0]
		}
		r := one(baton.EnqueueOptions{Kind: "r", MaxAttempts: 3})
		d := one(baton.EnqueueOptions{Kind: "d", MaxAttempts: 1})
		x := one(baton.EnqueueOptions{Kind: "x", MaxAttempts: 3})
		if err := c.CancelMessage(ctx, x.ID); err != nil { // running: it ends cancelled when settled
			t.Fatal(err)
		}
		w := enqueue(t, c, "ct", "{}", baton.EnqueueOptions{Kind: "w"})
		for _, commit := range []bool{false, true} {
			tx := begin(t, db)
			for _, m := range []*baton.Message{r, d, x} {
				if err := c.RetryTx(ctx, tx, m, errors.New("try later "+m.Kind), time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.CancelMessageTx(ctx, tx, w); err != nil {
				t.Fatal(err)
			}
			endTx(t, tx, commit)
		}
		wantJobEvent(t, sub, r.ID, "rt", baton.JobFailed, 1, "try later r")
		wantJobEvent(t, sub, d.ID, "rt", baton.JobDead, 1, "try later d")
		wantJobEvent(t, sub, x.ID, "rt", baton.JobCancelled, 1, "try later x")
		if ev := wantJobEvent(t, sub, w, "ct", baton.JobCancelled, 0, ""); ev.Kind != "w" {
			t.Fatalf("cancelled in the caller's transaction: kind %q, want w", ev.Kind)
		}
		// Nothing more (the rollback sent nothing): the next event is a
		// later one's.
		marker := enqueue(t, c, "ct", "{}")
		if err := c.CancelMessage(ctx, marker); err != nil {
			t.Fatal(err)
		}
		wantJobEvent(t, sub, marker, "ct", baton.JobCancelled, 0, "")
	})
}

// TestJobEventsRecovery: a claim that a recovery returns to its queue (its
// session ended) sends failed, one at its attempt limit dead, and so does
// a claim whose lease ran out (the rescuer).
func TestJobEventsRecovery(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		c := openDSN(t, dsn, baton.Options{Lease: 2 * time.Second, Heartbeat: 200 * time.Millisecond, PollInterval: 100 * time.Millisecond})
		sub := subscribeJobs(t, c, baton.JobFilter{})
		again := enqueue(t, c, "rc", "{}", baton.EnqueueOptions{Kind: "again", MaxAttempts: 2})
		last := enqueue(t, c, "rc", "{}", baton.EnqueueOptions{Kind: "last", MaxAttempts: 1})
		s := session(t, c)
		if ms := claim(t, s, "rc", baton.ClaimOptions{Max: 2}); len(ms) != 2 {
			t.Fatalf("claimed %d, want 2", len(ms))
		}
		if err := s.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		got := map[int64]baton.JobEvent{}
		for range 2 {
			ev := nextJobEvent(t, sub)
			got[ev.ID] = ev
		}
		if ev := got[again]; ev.State != baton.JobFailed || ev.Kind != "again" || ev.Queue != "rc" || ev.Attempt != 1 || ev.Error != "session ended" {
			t.Fatalf("a claim given back: %+v, want failed at attempt 1, session ended", ev)
		}
		if ev := got[last]; ev.State != baton.JobDead || ev.Kind != "last" || ev.Attempt != 1 || !strings.Contains(ev.Error, "attempt limit 1 reached") {
			t.Fatalf("a claim dead-lettered: %+v, want dead at attempt 1", ev)
		}
		// A lease that runs out at the attempt limit: the rescuer buries it.
		stale := enqueue(t, c, "rs", "{}", baton.EnqueueOptions{MaxAttempts: 1})
		if ms := claim(t, session(t, c), "rs", baton.ClaimOptions{Visibility: 300 * time.Millisecond}); len(ms) != 1 {
			t.Fatalf("claimed %d, want 1", len(ms))
		}
		wantJobEvent(t, sub, stale, "rs", baton.JobDead, 1, "claim lease expired")
	})
}

// TestJobEventsBulkAndDeps: a bulk cancel sends cancelled for each waiting
// message it cancelled (a running one's comes when it is settled), a
// delete sends nothing, and the dependants that a parent's death cancels
// send cancelled, their dependants too.
func TestJobEventsBulkAndDeps(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, s := openQS(t, b)
		sub := subscribeJobs(t, c, baton.JobFilter{})
		ctx := ctxT(t)
		run := enqueue(t, c, "bq", "{}", baton.EnqueueOptions{Kind: "r"})
		if ms := claim(t, s, "bq", baton.ClaimOptions{}); len(ms) != 1 || ms[0].ID != run {
			t.Fatalf("claimed %v, want %d", ms, run)
		}
		waiting := map[int64]bool{}
		for range 3 {
			waiting[enqueue(t, c, "bq", "{}", baton.EnqueueOptions{Kind: "w"})] = true
		}
		if n, err := c.Bulk(ctx, baton.BulkCancel, baton.MessageFilter{Queue: "bq"}); err != nil || n != 4 {
			t.Fatalf("bulk cancel: %d, %v; want 4", n, err)
		}
		for range 3 {
			ev := nextJobEvent(t, sub)
			if !waiting[ev.ID] || ev.Queue != "bq" || ev.Kind != "w" || ev.State != baton.JobCancelled {
				t.Fatalf("bulk cancel: event %+v, want the cancel of one of %v", ev, waiting)
			}
			delete(waiting, ev.ID)
		}
		if n, err := c.Bulk(ctx, baton.BulkDelete, baton.MessageFilter{Queue: "bq"}); err != nil || n != 3 {
			t.Fatalf("bulk delete: %d, %v; want 3", n, err)
		}

		dead := enqueue(t, c, "fq", "{}", baton.EnqueueOptions{MaxAttempts: 1})
		child := enqueue(t, c, "fq", "{}", baton.EnqueueOptions{Kind: "child", After: []int64{dead}})
		grand := enqueue(t, c, "fq", "{}", baton.EnqueueOptions{Kind: "grand", After: []int64{child}})
		ms := claim(t, s, "fq", baton.ClaimOptions{})
		if len(ms) != 1 || ms[0].ID != dead {
			t.Fatalf("claimed %v, want %d", ms, dead)
		}
		if err := s.Fail(ctx, ms[0], "broken"); err != nil {
			t.Fatal(err)
		}
		sweep(t, c)
		got := map[int64]baton.JobEvent{}
		for range 3 {
			ev := nextJobEvent(t, sub)
			got[ev.ID] = ev
		}
		if ev := got[dead]; ev.State != baton.JobDead {
			t.Fatalf("the parent's event %+v, want dead", ev)
		}
		for id, kind := range map[int64]string{child: "child", grand: "grand"} {
			if ev := got[id]; ev.State != baton.JobCancelled || ev.Kind != kind || ev.Queue != "fq" || !strings.Contains(ev.Error, "parent") {
				t.Fatalf("dependant %d's event %+v, want cancelled for its parent", id, ev)
			}
		}
		// Nothing more (the delete sent nothing): the next event is a
		// later one's.
		marker := enqueue(t, c, "ct", "{}")
		if err := c.CancelMessage(ctx, marker); err != nil {
			t.Fatal(err)
		}
		wantJobEvent(t, sub, marker, "ct", baton.JobCancelled, 0, "")
	})
}
