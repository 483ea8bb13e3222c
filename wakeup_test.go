package baton_test

import (
	"context"
	"errors"
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
			select {
			case err := <-got:
				if err != nil {
					t.Fatalf("case %d: %v waiter behind %v: %v", i, m[1], m[0], err)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("case %d: the %v waiter was not granted 15 s after the release: its lost wake-up was never polled for", i, m[1])
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
		select {
		case err := <-claimed:
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the waiting consumer did not get the message 15 s after its enqueue: its lost wake-up was never polled for")
		}
	})
}
