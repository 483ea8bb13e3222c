package baton_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver/postgres"
	"github.com/batonhq/baton/internal/batontest"
)

// TestControlTx: the queue control calls in the caller's transaction act
// if and only if it commits (DESIGN, Interfaces), and their wake-ups go
// out with the commit: a running message's handler is stopped with
// ErrCancelled once the cancelling transaction commits, not before; a
// consumer of another client gets a message made due in a transaction
// once it commits, not before.
func TestControlTx(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		db, ctx := batontest.SQLDB(t, dsn), ctxT(t)
		state := func(id int64) baton.MessageState { return getMessage(t, c, id).State }

		// Delete, cancel, retry now: rolled back, nothing; committed, done.
		del := enqueue(t, c, "ctl", "del")
		can := enqueue(t, c, "ctl", "can")
		for _, commit := range []bool{false, true} {
			tx := begin(t, db)
			if err := c.DeleteMessageTx(ctx, tx, "ctl", del); err != nil {
				t.Fatal(err)
			}
			if err := c.CancelMessageTx(ctx, tx, can); err != nil {
				t.Fatal(err)
			}
			endTx(t, tx, commit)
			if !commit && (state(del) != baton.StateReady || state(can) != baton.StateReady) {
				t.Fatalf("after a rollback: %s and %s, want both ready", state(del), state(can))
			}
		}
		if _, err := c.Message(ctx, del); !errors.Is(err, baton.ErrNotFound) {
			t.Fatalf("the deleted message: %v, want ErrNotFound", err)
		}
		if got := state(can); got != baton.StateCancelled {
			t.Fatalf("the cancelled message is %s", got)
		}

		// Pause and resume, and the dead letters.
		for _, commit := range []bool{false, true} {
			tx := begin(t, db)
			if err := c.SetQueuePausedTx(ctx, tx, "ctl", true); err != nil {
				t.Fatal(err)
			}
			endTx(t, tx, commit)
			if stats(t, c, "ctl").Paused != commit {
				t.Fatalf("paused %v after a transaction that committed: %v", !commit, commit)
			}
		}
		tx := begin(t, db)
		if err := c.SetQueuePausedTx(ctx, tx, "ctl", false); err != nil {
			t.Fatal(err)
		}
		endTx(t, tx, true)
		if stats(t, c, "ctl").Paused {
			t.Fatal("still paused after SetQueuePausedTx resumed it")
		}
		s := session(t, c)
		enqueue(t, c, "dq", "dead")
		ms := claim(t, s, "dq", baton.ClaimOptions{})
		if err := s.Fail(ctx, ms[0], "for good"); err != nil {
			t.Fatal(err)
		}
		for _, commit := range []bool{false, true} {
			tx := begin(t, db)
			n, err := c.PurgeDeadTx(ctx, tx, "dq")
			if err != nil || n != 1 {
				t.Fatalf("PurgeDeadTx: %d %v", n, err)
			}
			endTx(t, tx, commit)
			if want := map[bool]int64{false: 1, true: 0}[commit]; stats(t, c, "dq").Dead != want {
				t.Fatalf("%d dead letters after a purge that committed: %v", stats(t, c, "dq").Dead, commit)
			}
		}

		// A consumer of another client waits; a message made due in a
		// transaction reaches it with the commit.
		// Its poll for waiting consumers (every five intervals: 10 s) comes
		// too late for the test: only the commit's notification can serve
		// it in time (on MySQL, read by the listener's poll, every 2 s).
		consumerC := openDSN(t, dsn, baton.Options{PollInterval: 2 * time.Second})
		later := enqueue(t, c, "rq", "later", baton.EnqueueOptions{Delay: time.Hour})
		got := make(chan error, 1)
		go func() {
			ms, err := session(t, consumerC).Claim(ctxT(t), "rq", baton.ClaimOptions{Wait: 20 * time.Second})
			if err == nil && (len(ms) != 1 || ms[0].ID != later) {
				err = errors.New("claimed the wrong message")
			}
			got <- err
		}()
		waitFor(t, "the consumer to wait", func() bool { return baton.QueueWaiters(consumerC, "rq") == 1 })
		tx = begin(t, db)
		if err := c.RetryNowTx(ctx, tx, "rq", later); err != nil {
			t.Fatal(err)
		}
		stillWaiting(t, got, 300*time.Millisecond, "a consumer, with the message made due in an open transaction")
		endTx(t, tx, true)
		if err := await(t, got, 5*time.Second, "the consumer, after RetryNowTx committed"); err != nil {
			t.Fatal(err)
		}

		// A running message cancelled in a transaction: its handler (in
		// another client) stops with the commit.
		running := enqueue(t, c, "run", "running")
		causes, stop := blockedWorker(t, consumerC, "run", 3*time.Minute) // no renewal within the test
		tx = begin(t, db)
		wantErr(t, c.DeleteMessageTx(ctx, tx, "run", running), baton.ErrRunning)
		if err := c.CancelMessageTx(ctx, tx, running); err != nil {
			t.Fatal(err)
		}
		stillWaiting(t, causes, 300*time.Millisecond, "the handler, with its message cancelled in an open transaction")
		endTx(t, tx, true)
		if err := answer(t, causes, "the handler, after CancelMessageTx committed"); !errors.Is(err, baton.ErrCancelled) {
			t.Fatalf("the handler's context ended with %v, want ErrCancelled", err)
		}
		stop()

		// Bad calls.
		tx = begin(t, db)
		wantErr(t, c.CancelMessageTx(ctx, tx, running+1000), baton.ErrNotFound)
		wantErr(t, c.SetQueuePausedTx(ctx, tx, "nosuchqueue", true), baton.ErrUnknownQueue)
		endTx(t, tx, false)
		wantErr(t, c.DeleteMessageTx(ctx, db, "ctl", del), baton.ErrInvalid)
		wantErr(t, c.CancelMessageTx(ctx, nil, del), baton.ErrInvalid)
	})
}

// TestControlTxPgx: the control calls in a pgx transaction (postgres.PgxTx).
func TestControlTxPgx(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn, pool := pgxPool(t, b, "pgx transactions are PostgreSQL's")
		c := openDSN(t, dsn)
		ctx := ctxT(t)
		del := enqueue(t, c, "pq", "del")
		can := enqueue(t, c, "pq", "can")
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		ptx := postgres.PgxTx{Tx: tx}
		if err := c.DeleteMessageTx(ctx, ptx, "pq", del); err != nil {
			t.Fatal(err)
		}
		if err := c.CancelMessageTx(ctx, ptx, can); err != nil {
			t.Fatal(err)
		}
		if err := c.SetQueuePausedTx(ctx, ptx, "pq", true); err != nil {
			t.Fatal(err)
		}
		if getMessage(t, c, can).State != baton.StateReady {
			t.Fatal("cancelled before the commit")
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Message(ctx, del); !errors.Is(err, baton.ErrNotFound) {
			t.Fatalf("the deleted message: %v", err)
		}
		if getMessage(t, c, can).State != baton.StateCancelled || !stats(t, c, "pq").Paused {
			t.Fatal("the pgx transaction's cancel or pause did not land")
		}
	})
}
