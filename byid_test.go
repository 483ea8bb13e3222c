package baton_test

import (
	"errors"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestRedriveKeepsIDs: a redriven dead letter waits again under its own
// id, once (ListMessages shows one message), holds its unique key again,
// and runs and completes under that id.
func TestRedriveKeepsIDs(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openQDB(t, b)
		s := session(t, c)
		id := enqueue(t, c, "rd", "x", baton.EnqueueOptions{UniqueKey: "u"})
		ms := claim(t, s, "rd", baton.ClaimOptions{})
		if err := s.Fail(ctx, ms[0], "broken"); err != nil {
			t.Fatal(err)
		}
		if m := getMessage(t, c, id); m.State != baton.StateDead {
			t.Fatalf("message %d is %s, want dead", id, m.State)
		}
		if n, err := c.Redrive(ctx, "rd"); n != 1 || err != nil {
			t.Fatalf("redrive: %d %v", n, err)
		}
		if m := getMessage(t, c, id); m.State != baton.StateReady || m.Attempt != 0 {
			t.Fatalf("redriven message %d: %s, attempt %d", id, m.State, m.Attempt)
		}
		list, _, err := c.ListMessages(ctx, baton.ListOptions{Queue: "rd"})
		if err != nil || len(list) != 1 || list[0].ID != id {
			t.Fatalf("after redrive, ListMessages: %+v %v", list, err)
		}
		holder, err := c.Enqueue(ctx, "rd", []byte("y"), baton.EnqueueOptions{UniqueKey: "u"})
		if !errors.Is(err, baton.ErrDuplicate) || holder != id {
			t.Fatalf("unique key after redrive: holder %d, %v; want %d", holder, err, id)
		}
		ms = claim(t, s, "rd", baton.ClaimOptions{Max: 10})
		if len(ms) != 1 || ms[0].ID != id || ms[0].Attempt != 1 {
			t.Fatalf("claimed after redrive: %+v", ms)
		}
		if err := s.Ack(ctx, ms[0]); err != nil {
			t.Fatal(err)
		}
		if m := getMessage(t, c, id); m.State != baton.StateCompleted {
			t.Fatalf("message %d is %s, want completed", id, m.State)
		}

		// RedriveTx too.
		other := enqueue(t, c, "rd", "z")
		ms = claim(t, s, "rd", baton.ClaimOptions{})
		if err := s.Fail(ctx, ms[0], "broken"); err != nil {
			t.Fatal(err)
		}
		tx := begin(t, db)
		if n, err := c.RedriveTx(ctx, tx, "rd"); n != 1 || err != nil {
			t.Fatalf("RedriveTx: %d %v", n, err)
		}
		endTx(t, tx, true)
		if m := getMessage(t, c, other); m.State != baton.StateReady {
			t.Fatalf("message %d after RedriveTx is %s, want ready", other, m.State)
		}
	})
}

// TestRetryNowFinished: a completed, cancelled or dead message retried by
// id is ready again under the same id (the dead one, at its attempt limit,
// with one more attempt) and completes; in a transaction too.
func TestRetryNowFinished(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openQDB(t, b)
		s := session(t, c)
		done := enqueue(t, c, "rf", "done")
		ms := claim(t, s, "rf", baton.ClaimOptions{})
		if err := s.Ack(ctx, ms[0]); err != nil {
			t.Fatal(err)
		}
		dead := enqueue(t, c, "rf", "dead", baton.EnqueueOptions{MaxAttempts: 1})
		ms = claim(t, s, "rf", baton.ClaimOptions{})
		if err := s.Retry(ctx, ms[0], errors.New("no")); err != nil {
			t.Fatal(err)
		}
		cancelled := enqueue(t, c, "rf", "cancelled")
		if err := c.CancelMessage(ctx, cancelled); err != nil {
			t.Fatal(err)
		}
		want := map[int64]baton.MessageState{done: baton.StateCompleted, dead: baton.StateDead, cancelled: baton.StateCancelled}
		for id, st := range want {
			if m := getMessage(t, c, id); m.State != st {
				t.Fatalf("message %d is %s, want %s", id, m.State, st)
			}
		}
		wantErr(t, c.RetryNow(ctx, "other", done), baton.ErrNoMessage)
		wantErr(t, c.RetryNow(ctx, "rf", 1<<40), baton.ErrNoMessage)
		if err := c.RetryNow(ctx, "rf", done); err != nil {
			t.Fatal(err)
		}
		if err := c.RetryNow(ctx, "rf", dead); err != nil {
			t.Fatal(err)
		}
		tx := begin(t, db)
		if err := c.RetryNowTx(ctx, tx, "rf", cancelled); err != nil {
			t.Fatal(err)
		}
		endTx(t, tx, true)
		for id := range want {
			if m := getMessage(t, c, id); m.State != baton.StateReady {
				t.Fatalf("retried message %d is %s, want ready", id, m.State)
			}
		}
		if list, _, err := c.ListMessages(ctx, baton.ListOptions{Queue: "rf"}); err != nil || len(list) != 3 {
			t.Fatalf("after RetryNow, ListMessages: %+v %v", list, err)
		}
		ms = claim(t, s, "rf", baton.ClaimOptions{Max: 10})
		if len(ms) != 3 {
			t.Fatalf("claimed %d retried messages, want 3", len(ms))
		}
		for _, m := range ms {
			if _, ok := want[m.ID]; !ok {
				t.Fatalf("claimed message %d, not one retried", m.ID)
			}
			if m.ID == dead && m.Attempt != 2 {
				t.Fatalf("retried dead message: attempt %d, want 2", m.Attempt)
			}
			if err := s.Ack(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		wantErr(t, c.RetryNow(ctx, "rf", 1<<40), baton.ErrNoMessage)
		for id := range want {
			if m := getMessage(t, c, id); m.State != baton.StateCompleted {
				t.Fatalf("message %d is %s, want completed", id, m.State)
			}
		}
	})
}
