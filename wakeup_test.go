package baton_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestLostWakeUpsPolled: a wake-up is a hint, never the only path (DESIGN,
// Notifications). A client that loses every wake-up its listener brings
// still has its lock waiters granted and its waiting consumer served, by
// its polls, while another client's notifications keep the database's
// channels busy (a listener whose safety net waits for a quiet interval
// would never poll).
func TestLostWakeUpsPolled(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		opts := baton.Options{PollInterval: 100 * time.Millisecond}
		loud := openDSN(t, dsn, opts)
		deaf := openDSN(t, dsn, opts)
		baton.LoseWakeUps(deaf, true)

		ctx, stop := context.WithCancel(context.Background())
		var traffic sync.WaitGroup
		traffic.Add(1)
		go func() {
			defer traffic.Done()
			for ctx.Err() == nil {
				if err := loud.Notify(ctx, "traffic", "x"); err != nil && ctx.Err() == nil {
					t.Errorf("notify: %v", err)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		defer traffic.Wait()
		defer stop()

		// Each pair is a holder's mode and a waiter's: a reader behind a
		// writer, a writer behind readers, a writer behind a writer.
		holder := session(t, loud)
		for i, m := range [][2]baton.Mode{{baton.Write, baton.Read}, {baton.Read, baton.Write}, {baton.Write, baton.Write}} {
			mustLock(t, holder, "lost", m[0], "x")
			waiter := session(t, deaf)
			got := make(chan error, 1)
			go func() {
				_, err := waiter.Lock(ctxT(t), "lost", m[1], 20*time.Second, "x")
				got <- err
			}()
			waitPending(t, deaf, waiter, 1)
			if _, err := holder.Release(ctxT(t), "lost"); err != nil {
				t.Fatal(err)
			}
			if err := await(t, got, 15*time.Second, fmt.Sprintf("case %d: the %v waiter was not granted 15 s after the release: its lost wake-up was never polled for", i, m[1])); err != nil {
				t.Fatalf("case %d: %v waiter behind %v: %v", i, m[1], m[0], err)
			}
			if _, err := waiter.Release(ctxT(t), "lost"); err != nil {
				t.Fatal(err)
			}
		}

		// A consumer that waits, and a message enqueued by the other
		// client.
		consumer := session(t, deaf)
		claimed := make(chan error, 1)
		go func() {
			ms, err := consumer.Claim(ctxT(t), "lostq", baton.ClaimOptions{Wait: 20 * time.Second})
			if err == nil && (len(ms) != 1 || string(ms[0].Payload) != "m") {
				err = errors.New("claimed the wrong messages")
			}
			claimed <- err
		}()
		waitFor(t, "the consumer to wait", func() bool { return baton.QueueWaiters(deaf, "lostq") == 1 })
		if _, err := loud.Enqueue(ctxT(t), "lostq", []byte("m")); err != nil {
			t.Fatal(err)
		}
		if err := await(t, claimed, 15*time.Second, "the waiting consumer did not get the message 15 s after its enqueue: its lost wake-up was never polled for"); err != nil {
			t.Fatalf("claim: %v", err)
		}
	})
}

// TestConsumersPolledPerClient: the poll that covers lost wake-ups is the
// client's, one statement per poll interval for all of its waiting
// consumers, not one per consumer (DESIGN, Notifications). A client that
// loses every wake-up has six consumers waiting on three queues:
//   - while nothing is due they run no claim at all, only their client's
//     polls;
//   - a message enqueued on one queue is served, and wakes that queue's
//     consumers, not the others';
//   - the consumer of an ordered queue whose head runs in another client
//     (a message is due, but not for it) claims on every other poll, not
//     on every one, and still gets the next message once the head is
//     acknowledged, though it never hears of that.
func TestConsumersPolledPerClient(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		opts := baton.Options{PollInterval: 20 * time.Millisecond} // a poll every 100 ms
		loud := openDSN(t, dsn, opts)
		deaf := openDSN(t, dsn, opts)
		baton.LoseWakeUps(deaf, true)
		ctx, cancel := context.WithCancel(ctxT(t))
		var consumers sync.WaitGroup
		defer consumers.Wait()
		defer cancel()
		got := make(chan string, 8)
		consume := func(q string, mode baton.QueueMode) {
			s := session(t, deaf)
			consumers.Add(1)
			go func() {
				defer consumers.Done()
				ms, err := s.Claim(ctx, q, baton.ClaimOptions{Wait: baton.Forever, Mode: mode})
				switch {
				case ctx.Err() != nil:
				case err != nil:
					got <- "error: " + err.Error()
				default:
					got <- q + ":" + string(ms[0].Payload)
				}
			}()
			waitFor(t, "a consumer of "+q+" to wait", func() bool { return baton.QueueWaiters(deaf, q) > 0 })
		}
		for _, q := range []string{"pa", "pb", "pc"} {
			for range 2 {
				consume(q, baton.Parallel)
			}
		}
		waitFor(t, "six consumers to wait", func() bool {
			return baton.QueueWaiters(deaf, "pa")+baton.QueueWaiters(deaf, "pb")+baton.QueueWaiters(deaf, "pc") == 6
		})
		polls := func(n int64) {
			from := baton.QueuePolls(deaf)
			waitFor(t, fmt.Sprint(n, " polls"), func() bool { return baton.QueuePolls(deaf) >= from+n })
		}

		tries := baton.ClaimTries(deaf)
		polls(10)
		if n := baton.ClaimTries(deaf) - tries; n != 0 {
			t.Fatalf("six consumers waiting on empty queues ran %d claims during ten polls of their client, want none", n)
		}

		if _, err := loud.Enqueue(ctxT(t), "pb", []byte("m")); err != nil {
			t.Fatal(err)
		}
		if r := await(t, got, 15*time.Second, "no consumer got the message 15 s after its enqueue: the poll did not wake its queue's consumers"); r != "pb:m" {
			t.Fatalf("got %q, want pb:m", r)
		}
		polls(3)
		// pb's two consumers claim (one gets the message); pa's and pc's
		// four have nothing due and must not.
		if n := baton.ClaimTries(deaf) - tries; n < 2 || n > 5 {
			t.Fatalf("%d claims after a message on one of three queues, want pb's two consumers' (and a few more of the one left, woken again while its peer's claim ran), not the six consumers'", n)
		}

		// An ordered queue whose head runs in the other client.
		for _, p := range []string{"head", "next"} {
			if _, err := loud.Enqueue(ctxT(t), "po", []byte(p)); err != nil {
				t.Fatal(err)
			}
		}
		runner := session(t, loud)
		head, err := runner.Claim(ctxT(t), "po", baton.ClaimOptions{Mode: baton.Ordered})
		if err != nil || len(head) != 1 || string(head[0].Payload) != "head" {
			t.Fatalf("claim of the head: %v %v", head, err)
		}
		consume("po", baton.Ordered)
		tries = baton.ClaimTries(deaf)
		polls(20)
		n := baton.ClaimTries(deaf) - tries
		if n < 1 || n > 20/2+2 {
			t.Fatalf("the consumer of an ordered queue whose head runs elsewhere claimed %d times in twenty polls, want one claim every other poll (10, give or take)", n)
		}
		if err := runner.Ack(ctxT(t), head[0]); err != nil {
			t.Fatal(err)
		}
		if r := await(t, got, 15*time.Second, "the ordered queue's consumer did not get its next message 15 s after the head's acknowledgement"); r != "po:next" {
			t.Fatalf("got %q, want po:next", r)
		}
	})
}

// TestLockWaitersPolledPerClient: a client's waiting lock requests cost
// it one look per poll interval at their names' transaction gates (one
// statement for them all, DESIGN, Notifications: per process, not per
// waiter), however many requests wait; and the requests are granted when
// the holder lets go.
func TestLockWaitersPolledPerClient(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		holder, dsn := open(t, b)
		waiter := openDSN(t, dsn, baton.Options{PollInterval: 20 * time.Millisecond})
		// The requests' own searches for a cycle (20 ms into each wait)
		// would count as the detector's runs below.
		baton.SkipOwnDeadlockSearch(waiter, true)
		hs := session(t, holder)
		names := []string{"g1", "g2", "g3", "g4", "g5", "g6"}
		if _, err := hs.Lock(ctxT(t), "gp", baton.Write, 0, names...); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, len(names))
		for _, n := range names {
			s := session(t, waiter)
			go func() { _, err := s.Lock(ctxT(t), "gp", baton.Read, baton.Forever, n); got <- err }()
		}
		waitFor(t, "six requests pending", func() bool {
			ls, err := holder.Locks(ctxT(t))
			pending := 0
			for _, l := range ls {
				if l.Namespace == "gp" && l.Status == "PENDING" {
					pending++
				}
			}
			return err == nil && pending == len(names)
		})
		checks, looks := baton.LockChecks(waiter), baton.LockGateLooks(waiter)
		nets, detections := baton.LockNetLooks(waiter), baton.LockDetections(waiter)
		waitFor(t, "ten checks of the waiting requests", func() bool { return baton.LockChecks(waiter) >= checks+10 })
		dc, dl := baton.LockChecks(waiter)-checks, baton.LockGateLooks(waiter)-looks
		dn, dd := baton.LockNetLooks(waiter)-nets, baton.LockDetections(waiter)-detections
		// The statuses' check says which names are gated: a look of its
		// own only for names new to the poll (one, at most, here).
		if dl > 1 {
			t.Fatalf("six waiting requests cost their client %d looks at the gates of their own during %d checks of their statuses, want none past the first", dl, dc)
		}
		if b.Name == "sqlite" && dl != 0 {
			t.Fatalf("SQLite, whose transactions' locks are the write lock, looked at gates %d times", dl)
		}
		// The deadlock net reads the graph every five intervals, and runs
		// the detector (a transaction) only for a cycle.
		if dn == 0 || dn > dc/5+1 {
			t.Fatalf("%d looks at the wait graph during %d checks, want one per five", dn, dc)
		}
		if dd != 0 {
			t.Fatalf("the detector ran %d times with no cycle", dd)
		}
		if _, err := hs.Release(ctxT(t), "gp"); err != nil {
			t.Fatal(err)
		}
		for range names {
			if err := await(t, got, 20*time.Second, "a waiting reader after the release"); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// The poll's deadlock net finds a cycle that no waiting request's own
// search found (here: every one skipped, as if it had failed).
func TestLockDeadlockNet(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		c := openDSN(t, dsn, baton.Options{PollInterval: 40 * time.Millisecond})
		baton.SkipOwnDeadlockSearch(c, true)
		s1, s2 := session(t, c), session(t, c)
		mustLock(t, s1, "ns", baton.Write, "a")
		mustLock(t, s2, "ns", baton.Write, "b")
		ch1 := waiting(t, c, s1, "ns", baton.Write, baton.Forever, "b")
		nets := baton.LockNetLooks(c)
		ctx, cancel := context.WithTimeout(ctxT(t), 30*time.Second)
		defer cancel()
		// s2's read request closes the cycle and is its victim.
		_, err := s2.Lock(ctx, "ns", baton.Read, baton.Forever, "a")
		wantErr(t, err, baton.ErrDeadlock)
		if baton.LockNetLooks(c) == nets {
			t.Fatal("the deadlock was reported with no look of the net")
		}
		release(t, s2, "ns")
		mustRecv(t, ch1)
	})
}
