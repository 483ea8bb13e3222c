package baton_test

import (
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestMaxConnsWaitsAgain (every backend): a client with MaxConns 1 closes
// its listener once its lock waiter is granted and opens it again for
// the next wait; each of several waits in a row is granted, a queue
// consumer afterwards is served, and the client closes cleanly.
func TestMaxConnsWaitsAgain(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		c := openDSN(t, dsn, baton.Options{MaxConns: 1, PollInterval: 100 * time.Millisecond})
		other := openDSN(t, dsn)
		holder, waiter := session(t, other), session(t, c)
		for round := 0; round < 3; round++ {
			mustLock(t, holder, "mc", baton.Write, "x")
			granted := waiting(t, c, waiter, "mc", baton.Write, 20*time.Second, "x")
			if _, err := holder.Release(ctxT(t), "mc"); err != nil {
				t.Fatal(err)
			}
			if err := <-granted; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if _, err := waiter.Release(ctxT(t), "mc"); err != nil {
				t.Fatal(err)
			}
		}
		claimed := make(chan []*baton.Message, 1)
		go func() {
			ms, err := waiter.Claim(ctxT(t), "mcq", baton.ClaimOptions{Wait: 20 * time.Second})
			if err != nil {
				t.Error(err)
			}
			claimed <- ms
		}()
		time.Sleep(50 * time.Millisecond) // usually waiting by now; either way it is served
		enqueue(t, other, "mcq", "m")
		if ms := <-claimed; len(ms) != 1 || string(ms[0].Payload) != "m" {
			t.Fatalf("claimed %v, want the message", ms)
		}
	})
}
