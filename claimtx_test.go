package baton_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestClaimTx: a claimed message retried, failed or extended in the
// caller's transaction (RetryTx, with or without a delay, FailTx, ExtendTx), and a
// queue's dead letters re-driven there (RedriveTx), change nothing if it
// rolls back and act once it commits (DESIGN, Interfaces: every operation
// that writes has a variant in the caller's transaction); the worker's own
// settlement afterwards finds the claim gone; a re-drive leaves the dead
// letters that arrive while it runs; a retry that makes the message due
// wakes another client's consumer with the commit, not before.
func TestClaimTx(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		db, ctx := batontest.SQLDB(t, dsn), ctxT(t)
		s := session(t, c)
		one := func(q, payload string, o ...baton.EnqueueOptions) *baton.Message {
			t.Helper()
			id := enqueue(t, c, q, payload, o...)
			ms := claim(t, s, q, baton.ClaimOptions{})
			if len(ms) != 1 || ms[0].ID != id {
				t.Fatalf("claimed %v of %s, want message %d", ms, q, id)
			}
			return ms[0]
		}
		state := func(id int64) baton.MessageState { return getMessage(t, c, id).State }

		// Retry after an hour, and fail: rolled back, still running;
		// committed, retrying and dead, with the attempt's error.
		r, f := one("cq", "retry"), one("cq", "fail")
		for _, commit := range []bool{false, true} {
			tx := begin(t, db)
			if err := c.RetryTx(ctx, tx, r, errors.New("try later"), time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := c.FailTx(ctx, tx, f, "broken for good"); err != nil {
				t.Fatal(err)
			}
			endTx(t, tx, commit)
			if !commit && (state(r.ID) != baton.StateRunning || state(f.ID) != baton.StateRunning) {
				t.Fatalf("after a rollback: %s and %s, want both running", state(r.ID), state(f.ID))
			}
		}
		if m := getMessage(t, c, r.ID); m.State != baton.StateRetrying || m.LastError != "try later" || time.Until(m.RunAt) < 50*time.Minute {
			t.Fatalf("the retried message: %s, error %q, due %v; want retrying for an hour after try later", m.State, m.LastError, m.RunAt)
		}
		if m := getMessage(t, c, f.ID); m.State != baton.StateDead || m.LastError != "broken for good" {
			t.Fatalf("the failed message: %s, error %q; want dead with its reason", m.State, m.LastError)
		}
		wantErr(t, s.Ack(ctx, r), baton.ErrNotClaimed)
		wantErr(t, s.Retry(ctx, f, errors.New("the worker's own")), baton.ErrNotClaimed)
		if state(f.ID) != baton.StateDead {
			t.Fatalf("the worker's retry after FailTx left the message %s", state(f.ID))
		}

		// At its attempt limit a retry is a dead letter.
		last := one("cq", "last", baton.EnqueueOptions{MaxAttempts: 1})
		tx := begin(t, db)
		if err := c.RetryTx(ctx, tx, last, errors.New("once only")); err != nil {
			t.Fatal(err)
		}
		endTx(t, tx, true)
		if m := getMessage(t, c, last.ID); m.State != baton.StateDead || !strings.Contains(m.LastError, "attempt limit 1 reached") {
			t.Fatalf("a retry at the attempt limit: %s, %q; want dead", m.State, m.LastError)
		}

		// Extend: the claim runs for an hour once the transaction commits.
		e := one("cq", "extend")
		before := getMessage(t, c, e.ID).ClaimedUntil
		for _, commit := range []bool{false, true} {
			tx := begin(t, db)
			if err := c.ExtendTx(ctx, tx, e, time.Hour); err != nil {
				t.Fatal(err)
			}
			endTx(t, tx, commit)
			until := getMessage(t, c, e.ID).ClaimedUntil
			if extended := time.Until(until) > 50*time.Minute; extended != commit || !commit && !until.Equal(before) {
				t.Fatalf("claimed until %v (before %v) after an extension that committed: %v", until, before, commit)
			}
		}

		// Re-drive: two dead letters; rolled back, still dead; committed,
		// ready, and a message that dies meanwhile (server backends: on
		// SQLite the transaction keeps every other writer out) stays dead.
		for _, p := range []string{"d1", "d2"} {
			if err := s.Fail(ctx, one("rd", p), "dead"); err != nil {
				t.Fatal(err)
			}
		}
		late := one("rd", "late")
		for _, commit := range []bool{false, true} {
			tx := begin(t, db)
			n, err := c.RedriveTx(ctx, tx, "rd")
			if err != nil || n != 2 {
				t.Fatalf("RedriveTx: %d %v, want 2", n, err)
			}
			died := make(chan error, 1)
			if commit && b.Name != "sqlite" {
				// In another connection; it may wait for the re-drive's
				// locks (MySQL's gap locks under REPEATABLE READ).
				go func() { died <- s.Fail(ctxT(t), late, "late") }()
			} else {
				died <- nil
			}
			endTx(t, tx, commit)
			if err := <-died; err != nil {
				t.Fatal(err)
			}
			st := stats(t, c, "rd")
			wantReady, wantDead := int64(0), int64(2)
			switch {
			case commit && b.Name == "sqlite":
				wantReady, wantDead = 2, 0
			case commit:
				wantReady, wantDead = 2, 1 // the late one
			}
			if st.Ready != wantReady || st.Dead != wantDead {
				t.Fatalf("after a re-drive that committed (%v): %d ready, %d dead; want %d and %d", commit, st.Ready, st.Dead, wantReady, wantDead)
			}
		}

		// A retry due now in a transaction reaches a waiting consumer of
		// another client with the commit.
		w := one("wq", "wake")
		// Its poll for waiting consumers (every five intervals: 10 s) comes
		// too late for the test: only the commit's notification can serve
		// it in time (on MySQL, read by the listener's poll, every 2 s).
		consumerC := openDSN(t, dsn, baton.Options{PollInterval: 2 * time.Second})
		got := make(chan error, 1)
		go func() {
			ms, err := session(t, consumerC).Claim(ctxT(t), "wq", baton.ClaimOptions{Wait: 20 * time.Second})
			if err == nil && (len(ms) != 1 || ms[0].ID != w.ID) {
				err = errors.New("claimed the wrong message")
			}
			got <- err
		}()
		waitFor(t, "the consumer to wait", func() bool { return baton.QueueWaiters(consumerC, "wq") == 1 })
		tx = begin(t, db)
		if err := c.RetryTx(ctx, tx, w, errors.New("again now"), 0); err != nil {
			t.Fatal(err)
		}
		stillWaiting(t, got, 300*time.Millisecond, "a consumer, with the message retried in an open transaction")
		endTx(t, tx, true)
		if err := await(t, got, 5*time.Second, "the consumer, after RetryTx committed"); err != nil {
			t.Fatal(err)
		}

		// Bad calls.
		tx = begin(t, db)
		wantErr(t, c.FailTx(ctx, tx, nil, "x"), baton.ErrInvalid)
		wantErr(t, c.RetryTx(ctx, tx, nil, nil), baton.ErrInvalid)
		wantErr(t, c.ExtendTx(ctx, tx, &baton.Message{ID: e.ID, Queue: "cq"}, time.Minute), baton.ErrInvalid)
		wantErr(t, c.FailTx(ctx, tx, r, "not claimed any more"), baton.ErrNotClaimed)
		if _, err := c.RedriveTx(ctx, tx, "nosuchqueue"); !errors.Is(err, baton.ErrUnknownQueue) {
			t.Fatalf("RedriveTx of an unknown queue: %v", err)
		}
		endTx(t, tx, false)
		wantErr(t, c.ExtendTx(ctx, db, e, time.Minute), baton.ErrInvalid)
		if _, err := c.RedriveTx(ctx, nil, "rd"); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("RedriveTx without a transaction: %v", err)
		}
	})
}
