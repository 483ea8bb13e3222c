package baton_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestClaimReplyLost: a claim that committed in the database but whose
// reply was lost (the connection dropped during the call) fails, and its
// message goes back to the queue at once, its attempt not counted: another
// session claims it long before the claim's visibility (a minute) runs
// out. What the session knows it holds stays its own. Over a network the
// reply is lost for real: a proxy holds the server's replies, and once the
// claim is seen committed, cuts the connections. SQLite has no network:
// the engine drops the reply of a claim that committed.
func TestClaimReplyLost(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		cdsn := dsn
		var p *batontest.Proxy
		if b.Name != "sqlite" {
			cdsn, p = viaProxy(t, dsn)
		}
		opts := baton.Options{Lease: time.Minute, PollInterval: 200 * time.Millisecond}
		lossy := openDSN(t, cdsn, opts)
		other := openDSN(t, dsn, opts)
		s, s2 := session(t, lossy), session(t, other)
		const q = "lost"
		held := enqueue(t, other, q, "held")
		co := baton.ClaimOptions{Visibility: time.Minute}
		known := claim(t, s, q, co)
		if len(known) != 1 || known[0].ID != held {
			t.Fatalf("claimed %v, want message %d", known, held)
		}
		id := enqueue(t, other, q, "lost")

		if p == nil {
			baton.DropClaimReplies(lossy, 1)
			if ms, err := s.Claim(ctxT(t), q, co); err == nil {
				t.Fatalf("the claim whose reply was dropped returned %d messages", len(ms))
			}
		} else {
			p.DelayReplies(2 * time.Second)
			got := make(chan error, 1)
			go func() {
				_, err := s.Claim(ctxT(t), q, co)
				got <- err
			}()
			// Cut once the claim committed, before its reply arrives.
			deadline := time.Now().Add(20 * time.Second)
			for {
				st, err := other.Stats(ctxT(t), q)
				if err != nil {
					t.Fatal(err)
				}
				if st.Claimed == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the claim never committed")
				}
				time.Sleep(5 * time.Millisecond)
			}
			p.DelayReplies(0)
			p.Cut(false)
			if err := recv(t, got); err == nil {
				t.Fatal("the claim whose connection was cut returned no error")
			} else {
				t.Logf("claim: %v", err)
			}
		}

		// Another session gets the message long before a minute.
		ms, err := s2.Claim(ctxT(t), q, baton.ClaimOptions{Wait: 15 * time.Second})
		if err != nil {
			t.Fatalf("the message of the lost claim is not claimable: %v", err)
		}
		m := ms[0]
		if m.ID != id || m.Attempt != 1 || m.LastError != "" || len(m.Errors) != 0 {
			t.Fatalf("claimed message %d attempt %d (last error %q, %d errors), want message %d attempt 1 with no error",
				m.ID, m.Attempt, m.LastError, len(m.Errors), id)
		}
		if err := s2.Ack(ctxT(t), m); err != nil {
			t.Fatal(err)
		}
		// The message the session knew it held is still its own.
		for try := 1; ; try++ {
			err := s.Ack(ctxT(t), known[0])
			if err == nil {
				break
			}
			// The first statement on a connection the cut left idle in
			// the pool fails; the server never saw it.
			if try == 3 || errors.Is(err, baton.ErrNotClaimed) {
				t.Fatalf("ack of the message the session knew it held: %v", err)
			}
		}
	})
}

// TestWorkerClaimReplyLost: a worker whose claim committed but lost its
// reply runs the message at once, at attempt 1, not once the claim's
// visibility (a minute) has run out, at attempt 2.
func TestWorkerClaimReplyLost(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		const q = "lostw"
		id := enqueue(t, c, q, "m")
		baton.DropClaimReplies(c, 1)
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()
		ran := make(chan *baton.Message, 1)
		done := make(chan error, 1)
		go func() {
			done <- c.Work(ctx, q, func(ctx context.Context, m *baton.Message) error {
				ran <- m
				return nil
			}, baton.WorkerOptions{Visibility: time.Minute})
		}()
		m := await(t, ran, 15*time.Second, "the message of the claim whose reply was lost did not run within 15 s")
		if m.ID != id || m.Attempt != 1 {
			t.Fatalf("ran message %d at attempt %d, want message %d at attempt 1", m.ID, m.Attempt, id)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
