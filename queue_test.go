package baton_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// fastRetry keeps backoffs short in tests.
var fastRetry = baton.Options{Retry: baton.RetryPolicy{Base: 5 * time.Millisecond, Max: 20 * time.Millisecond, Jitter: 0.1}}

func openQ(t *testing.T, b batontest.Backend) (*baton.Client, string) {
	t.Helper()
	dsn := b.NewDSN(t)
	return openDSN(t, dsn, fastRetry), dsn
}

func enqueue(t *testing.T, c *baton.Client, q, payload string, opts ...baton.EnqueueOptions) int64 {
	t.Helper()
	id, err := c.Enqueue(ctxT(t), q, []byte(payload), opts...)
	if err != nil {
		t.Fatalf("enqueue %q: %v", payload, err)
	}
	return id
}

// enqueueMany enqueues n messages on q in one EnqueueMany, message i as
// msg(i) says.
func enqueueMany(t *testing.T, c *baton.Client, q string, n int, msg func(i int) baton.NewMessage) []int64 {
	t.Helper()
	msgs := make([]baton.NewMessage, n)
	for i := range msgs {
		msgs[i] = msg(i)
	}
	ids, err := c.EnqueueMany(ctxT(t), q, msgs)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// openQS is openQ with a session of the client.
func openQS(t *testing.T, b batontest.Backend) (*baton.Client, *baton.Session) {
	t.Helper()
	c, _ := openQ(t, b)
	return c, session(t, c)
}

func claim(t *testing.T, s *baton.Session, q string, o baton.ClaimOptions) []*baton.Message {
	t.Helper()
	ms, err := s.Claim(ctxT(t), q, o)
	if err != nil && !errors.Is(err, baton.ErrEmpty) {
		t.Fatalf("claim: %v", err)
	}
	return ms
}

func payloads(ms []*baton.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Payload)
	}
	return out
}

func ack(t *testing.T, s *baton.Session, ms ...*baton.Message) {
	t.Helper()
	for _, m := range ms {
		if err := s.Ack(ctxT(t), m); err != nil {
			t.Fatalf("ack %d: %v", m.ID, err)
		}
	}
}

func stats(t *testing.T, c *baton.Client, q string) baton.QueueStats {
	t.Helper()
	st, err := c.Stats(ctxT(t), q)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestQueueBasics(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, s := openQS(t, b)
		_, err := s.Claim(ctxT(t), "q", baton.ClaimOptions{})
		wantErr(t, err, baton.ErrEmpty)
		enqueue(t, c, "q", "b", baton.EnqueueOptions{Priority: 5})
		enqueue(t, c, "q", "c", baton.EnqueueOptions{Priority: 5})
		enqueue(t, c, "q", "a", baton.EnqueueOptions{Priority: 1})
		enqueue(t, c, "q", "later", baton.EnqueueOptions{Delay: time.Hour})
		if st := stats(t, c, "q"); st.Ready != 3 || st.Scheduled != 1 || st.Claimed != 0 || st.Dead != 0 {
			t.Fatalf("stats %+v", st)
		}
		ms := claim(t, s, "q", baton.ClaimOptions{Max: 10})
		if got := strings.Join(payloads(ms), ","); got != "a,b,c" {
			t.Fatalf("served %s, want a,b,c (priority, then time, then id)", got)
		}
		if ms[0].Attempt != 1 || ms[0].MaxAttempts != baton.DefaultMaxAttempts || ms[0].Queue != "q" {
			t.Fatalf("message %+v", ms[0])
		}
		if st := stats(t, c, "q"); st.Claimed != 3 || st.Ready != 0 {
			t.Fatalf("stats after claim %+v", st)
		}
		// Claimed messages are not handed out again.
		other := session(t, c)
		_, err = other.Claim(ctxT(t), "q", baton.ClaimOptions{Max: 10})
		wantErr(t, err, baton.ErrEmpty)
		ack(t, s, ms...)
		wantErr(t, s.Ack(ctxT(t), ms[0]), baton.ErrNotClaimed)
		if st := stats(t, c, "q"); st.Claimed != 0 || st.Ready != 0 || st.Scheduled != 1 {
			t.Fatalf("stats after ack %+v", st)
		}
		// A short delay is honoured.
		enqueue(t, c, "d", "soon", baton.EnqueueOptions{Delay: 300 * time.Millisecond})
		start := time.Now()
		ms = claim(t, s, "d", baton.ClaimOptions{Wait: 10 * time.Second})
		if len(ms) != 1 || time.Since(start) < 250*time.Millisecond {
			t.Fatalf("delayed message: %v after %v", payloads(ms), time.Since(start))
		}
	})
}

func TestQueueBadInput(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		for _, tc := range []struct {
			q       string
			payload []byte
			o       baton.EnqueueOptions
		}{
			{"q", nil, baton.EnqueueOptions{}},
			{"q", make([]byte, baton.MaxMessagePayload+1), baton.EnqueueOptions{}},
			{"q", []byte("x"), baton.EnqueueOptions{Delay: -time.Second}},
			{"q", []byte("x"), baton.EnqueueOptions{MaxAttempts: -1}},
			{"bad name", []byte("x"), baton.EnqueueOptions{}},
			{"", []byte("x"), baton.EnqueueOptions{}},
		} {
			_, err := c.Enqueue(ctx, tc.q, tc.payload, tc.o)
			wantErr(t, err, baton.ErrInvalid)
		}
		// A bad message anywhere in a batch enqueues nothing.
		_, err := c.EnqueueMany(ctx, "q", []baton.NewMessage{{Payload: []byte("ok")}, {Payload: nil}})
		wantErr(t, err, baton.ErrInvalid)
		_, err = c.Stats(ctx, "q")
		wantErr(t, err, baton.ErrUnknownQueue)
		_, err = c.DeadLetters(ctx, "nope", 10)
		wantErr(t, err, baton.ErrUnknownQueue)
		if _, err := c.Enqueue(ctx, "q", make([]byte, baton.MaxMessagePayload)); err != nil {
			t.Fatalf("payload of exactly the limit: %v", err)
		}
	})
}

func TestQueueRetryAndDeadLetters(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, s := openQS(t, b)
		ctx := ctxT(t)
		enqueue(t, c, "r", "x", baton.EnqueueOptions{MaxAttempts: 3})
		enqueue(t, c, "r", "y")
		// A retry goes to the back of a parallel queue.
		ms := claim(t, s, "r", baton.ClaimOptions{})
		if err := s.RetryAfter(ctx, ms[0], 0, errors.New("smtp 451")); err != nil {
			t.Fatal(err)
		}
		ms = claim(t, s, "r", baton.ClaimOptions{Max: 2})
		if got := strings.Join(payloads(ms), ","); got != "y,x" {
			t.Fatalf("after retry: %s, want y,x", got)
		}
		x := ms[1]
		if x.Attempt != 2 || x.LastError != "smtp 451" {
			t.Fatalf("retried message %+v", x)
		}
		ack(t, s, ms[0])
		// Backoff: the next attempt is not claimable at once.
		if err := s.Retry(ctx, x, errors.New("again")); err != nil {
			t.Fatal(err)
		}
		ms = claim(t, s, "r", baton.ClaimOptions{Wait: 5 * time.Second})
		if len(ms) != 1 || ms[0].Attempt != 3 {
			t.Fatalf("third attempt: %+v", ms)
		}
		// At the attempt limit a retry dead-letters.
		if err := s.Retry(ctx, ms[0], errors.New("final")); err != nil {
			t.Fatal(err)
		}
		st := stats(t, c, "r")
		if st.Dead != 1 || st.Unfinished() != 0 {
			t.Fatalf("stats %+v", st)
		}
		dead, err := c.DeadLetters(ctx, "r", 10)
		if err != nil || len(dead) != 1 || string(dead[0].Payload) != "x" || dead[0].Attempts != 3 || !strings.Contains(dead[0].Error, "final") {
			t.Fatalf("dead letters %+v, %v", dead, err)
		}
		// Fail dead-letters at once.
		enqueue(t, c, "r", "z")
		ms = claim(t, s, "r", baton.ClaimOptions{})
		if err := s.Fail(ctx, ms[0], "malformed"); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Redrive(ctx, "r"); n != 2 || err != nil {
			t.Fatalf("redrive: %d %v", n, err)
		}
		ms = claim(t, s, "r", baton.ClaimOptions{Max: 10})
		if len(ms) != 2 || ms[0].Attempt != 1 {
			t.Fatalf("redriven: %+v", ms)
		}
		for _, m := range ms {
			_ = s.Fail(ctx, m, "again")
		}
		if n, err := c.PurgeDead(ctx, "r"); n != 2 || err != nil {
			t.Fatalf("purge: %d %v", n, err)
		}
		if st := stats(t, c, "r"); st.Dead != 0 {
			t.Fatalf("after purge %+v", st)
		}
	})
}

func TestQueueOrdered(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		s1, s2 := session(t, c), session(t, c)
		ctx := ctxT(t)
		for i := 1; i <= 3; i++ {
			enqueue(t, c, "o", fmt.Sprint(i))
		}
		o := baton.ClaimOptions{Mode: baton.Ordered, Max: 5}
		ms := claim(t, s1, "o", o)
		if len(ms) != 1 || string(ms[0].Payload) != "1" {
			t.Fatalf("ordered claim %v", payloads(ms))
		}
		// One in flight: nobody gets the next one.
		if got := claim(t, s2, "o", o); len(got) != 0 {
			t.Fatalf("second in flight: %v", payloads(got))
		}
		// A retry keeps its place and holds the queue back.
		if err := s1.RetryAfter(ctx, ms[0], 100*time.Millisecond, errors.New("busy")); err != nil {
			t.Fatal(err)
		}
		if got := claim(t, s2, "o", o); len(got) != 0 {
			t.Fatalf("queue not held back by the retry: %v", payloads(got))
		}
		var seen []string
		for len(seen) < 3 {
			ms := claim(t, s2, "o", baton.ClaimOptions{Mode: baton.Ordered, Wait: 5 * time.Second})
			if len(ms) != 1 {
				t.Fatalf("ordered queue stalled after %v", seen)
			}
			seen = append(seen, string(ms[0].Payload))
			ack(t, s2, ms[0])
		}
		if strings.Join(seen, ",") != "1,2,3" {
			t.Fatalf("order %v", seen)
		}
	})
}

func TestQueuePerKey(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, s := openQS(t, b)
		ctx := ctxT(t)
		for _, p := range []string{"a1", "b1", "a2", "c1", "b2", "a3"} {
			enqueue(t, c, "k", p, baton.EnqueueOptions{Key: p[:1]})
		}
		enqueue(t, c, "k", "nokey")
		o := baton.ClaimOptions{Mode: baton.PerKey, Max: 10}
		ms := claim(t, s, "k", o)
		if got := strings.Join(payloads(ms), ","); got != "a1,b1,c1,nokey" {
			t.Fatalf("per-key claim %s, want the head of each key", got)
		}
		if more := claim(t, s, "k", o); len(more) != 0 {
			t.Fatalf("a key was in flight twice: %v", payloads(more))
		}
		// A retry of a1 holds back key a only.
		if err := s.RetryAfter(ctx, ms[0], 200*time.Millisecond, errors.New("x")); err != nil {
			t.Fatal(err)
		}
		ack(t, s, ms[1], ms[2], ms[3])
		ms = claim(t, s, "k", o)
		if got := strings.Join(payloads(ms), ","); got != "b2" {
			t.Fatalf("after retry: %s, want b2 only (a held back by its retry)", got)
		}
		ack(t, s, ms...)
		var rest []string
		for len(rest) < 3 {
			ms := claim(t, s, "k", baton.ClaimOptions{Mode: baton.PerKey, Max: 10, Wait: 5 * time.Second})
			if len(ms) == 0 {
				t.Fatalf("stalled after %v", rest)
			}
			rest = append(rest, payloads(ms)...)
			ack(t, s, ms...)
		}
		if strings.Join(rest, ",") != "a1,a2,a3" {
			t.Fatalf("key a in order: %v", rest)
		}
	})
}

func TestQueueEnqueueTx(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openQDB(t, b)
		s := session(t, c)
		tx := begin(t, db)
		if _, err := c.EnqueueTx(ctx, tx, "tx", []byte("rolled back")); err != nil {
			t.Fatal(err)
		}
		endTx(t, tx, false)
		tx = begin(t, db)
		id, err := c.EnqueueTx(ctx, tx, "tx", []byte("committed"))
		if err != nil {
			t.Fatal(err)
		}
		endTx(t, tx, true)
		ms := claim(t, s, "tx", baton.ClaimOptions{Max: 10, Wait: 5 * time.Second})
		if len(ms) != 1 || string(ms[0].Payload) != "committed" || (id != 0 && ms[0].ID != id) {
			t.Fatalf("got %v (id %d, want %d)", payloads(ms), ms[0].ID, id)
		}
		// Several at once, all or none.
		for _, commit := range []bool{false, true} {
			tx := begin(t, db)
			ids, err := c.EnqueueManyTx(ctx, tx, "txmany", []baton.NewMessage{{Payload: []byte(fmt.Sprint("a", commit))}, {Payload: []byte(fmt.Sprint("b", commit))}})
			if err != nil || len(ids) != 2 {
				t.Fatalf("EnqueueManyTx: %v %v", ids, err)
			}
			endTx(t, tx, commit)
		}
		if got := payloads(claim(t, s, "txmany", baton.ClaimOptions{Max: 10, Wait: 5 * time.Second})); strings.Join(got, ",") != "atrue,btrue" {
			t.Fatalf("EnqueueManyTx after a rollback and a commit: %v", got)
		}
		_, err = c.EnqueueManyTx(ctx, db, "txmany", nil)
		wantErr(t, err, baton.ErrInvalid)
	})
}

// TestQueueCrashRecovery: claims of a session that ends go back to the
// queue with their attempt counted; so do claims whose lease ran out; at the
// attempt limit they go to the dead letters.
func TestQueueCrashRecovery(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := openQ(t, b)
		c := openDSN(t, dsn, baton.Options{Lease: 600 * time.Millisecond, Retry: fastRetry.Retry})
		ctx := ctxT(t)
		enqueue(t, c, "cr", "x", baton.EnqueueOptions{MaxAttempts: 3})
		dying := session(t, c)
		if ms := claim(t, dying, "cr", baton.ClaimOptions{}); len(ms) != 1 {
			t.Fatalf("first claim: %v", payloads(ms))
		}
		if err := dying.Close(ctx); err != nil {
			t.Fatal(err)
		}
		s := session(t, c)
		ms := claim(t, s, "cr", baton.ClaimOptions{Wait: 5 * time.Second})
		if len(ms) != 1 || ms[0].Attempt != 2 || !strings.Contains(ms[0].LastError, "session ended") {
			t.Fatalf("after the session ended: %+v", ms)
		}
		// A lease that runs out: the message comes back while the session lives.
		if err := s.Extend(ctx, ms[0], 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		got := claim(t, s, "cr", baton.ClaimOptions{Wait: 10 * time.Second})
		if len(got) != 1 || got[0].Attempt != 3 {
			t.Fatalf("after the lease ran out: %+v", got)
		}
		wantErr(t, s.Ack(ctx, ms[0]), baton.ErrNotClaimed)
		// At the limit, the next crash dead-letters it.
		if err := s.Extend(ctx, got[0], 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(15 * time.Second)
		for stats(t, c, "cr").Dead != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("never dead-lettered: %+v", stats(t, c, "cr"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestQueueWorker: the worker runtime with concurrency, a panic turned into
// a retry with its error recorded, an error retried, ErrPermanent
// dead-lettered, and a graceful stop.
func TestQueueWorker(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		for i := 0; i < 40; i++ {
			enqueue(t, c, "w", fmt.Sprint(i), baton.EnqueueOptions{MaxAttempts: 2})
		}
		var mu sync.Mutex
		done := map[string]int{}
		var running, peak atomic.Int32
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		h := func(ctx context.Context, m *baton.Message) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
			p := string(m.Payload)
			switch {
			case p == "7" && m.Attempt == 1:
				panic("boom")
			case p == "8" && m.Attempt == 1:
				return errors.New("transient")
			case p == "9":
				return fmt.Errorf("bad: %w", baton.ErrPermanent)
			}
			mu.Lock()
			done[p]++
			mu.Unlock()
			return nil
		}
		// Drain runs the cron way: each run stops once nothing is ready, and
		// the retries of 7 and 8 may still be backing off; run again until
		// the queue holds nothing.
		deadline := time.Now().Add(30 * time.Second)
		for {
			if err := c.Work(wctx, "w", h, baton.WorkerOptions{Concurrency: 4, Drain: true}); err != nil {
				t.Fatal(err)
			}
			if st := stats(t, c, "w"); st.Unfinished() == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("worker did not drain")
			}
			time.Sleep(5 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(done) != 39 {
			t.Fatalf("%d messages done, want 39", len(done))
		}
		for p, n := range done {
			if n != 1 {
				t.Fatalf("message %s handled %d times", p, n)
			}
		}
		if peak.Load() > 4 || peak.Load() < 2 {
			t.Fatalf("peak concurrency %d, want 2..4", peak.Load())
		}
		dead, _ := c.DeadLetters(ctx, "w", 10)
		if len(dead) != 1 || string(dead[0].Payload) != "9" {
			t.Fatalf("dead letters %+v", dead)
		}
	})
}

func TestQueueWorkerGracefulStop(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		enqueue(t, c, "g", "slow")
		started := make(chan struct{})
		var finished atomic.Bool
		wctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			errc <- c.Work(wctx, "g", func(ctx context.Context, m *baton.Message) error {
				close(started)
				time.Sleep(300 * time.Millisecond)
				finished.Store(true)
				return nil
			}, baton.WorkerOptions{Grace: 5 * time.Second})
		}()
		<-started
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !finished.Load() {
			t.Fatal("in-flight message not finished within the grace period")
		}
		if st := stats(t, c, "g"); st.Unfinished() != 0 {
			t.Fatalf("finished message not acknowledged: %+v", st)
		}
	})
}

// TestQueueThroughput: finished messages (acknowledged and dead-lettered)
// are counted per queue and reported as a rate over about five minutes.
func TestQueueThroughput(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := openQ(t, b)
		ctx := ctxT(t)
		c := openDSN(t, dsn, fastRetry)
		for i := 0; i < 10; i++ {
			enqueue(t, c, "tp", fmt.Sprint(i))
		}
		s := session(t, c)
		ms := claim(t, s, "tp", baton.ClaimOptions{Max: 8})
		ack(t, s, ms[:7]...)
		if err := s.Fail(ctx, ms[7], "bad"); err != nil {
			t.Fatal(err)
		}
		if st := stats(t, c, "tp"); st.Throughput != 0 {
			t.Fatalf("throughput %v before any flush", st.Throughput)
		}
		_ = c.Close() // flushes the counts
		other := openDSN(t, dsn)
		st := stats(t, other, "tp")
		lo, hi := 8.0/360, 8.0/300
		if st.Throughput < lo*0.99 || st.Throughput > hi*1.01 {
			t.Fatalf("throughput %v/s, want 8 messages over 5 to 6 minutes (%v..%v)", st.Throughput, lo, hi)
		}
	})
}

// TestQueueOrderedWorkerKeepsOrderAcrossFailures: an ordered worker runs its
// in-order batches one message at a time; when a message fails, nothing
// after it runs before it succeeds, and the messages given back keep their
// attempt count.
func TestQueueOrderedWorkerKeepsOrderAcrossFailures(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		for i := 1; i <= 10; i++ {
			enqueue(t, c, "ord", fmt.Sprint(i))
		}
		var runs []string
		var running atomic.Int32
		h := func(ctx context.Context, m *baton.Message) error {
			if running.Add(1) != 1 {
				t.Error("two messages of an ordered queue ran at once")
			}
			defer running.Add(-1)
			runs = append(runs, fmt.Sprintf("%s/%d", m.Payload, m.Attempt))
			if string(m.Payload) == "4" && m.Attempt == 1 {
				return errors.New("try again")
			}
			return nil
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			if err := c.Work(ctx, "ord", h, baton.WorkerOptions{Mode: baton.Ordered, Drain: true}); err != nil {
				t.Fatal(err)
			}
			if st := stats(t, c, "ord"); st.Unfinished() == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("stalled after %v", runs)
			}
			time.Sleep(5 * time.Millisecond)
		}
		want := "1/1 2/1 3/1 4/1 4/2 5/1 6/1 7/1 8/1 9/1 10/1"
		if got := strings.Join(runs, " "); got != want {
			t.Fatalf("runs %s\nwant %s", got, want)
		}
	})
}

// TestStatsOverTheLimit: more than 10,000 messages of a state are counted
// by the planner's estimate (PostgreSQL, MySQL/MariaDB; after ANALYZE,
// within a factor of two) or exactly (SQLite), and the stats say so;
// smaller states and queues stay exact.
func TestStatsOverTheLimit(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		const n = 10050
		enqueueMany(t, c, "big", n, func(int) baton.NewMessage { return baton.NewMessage{Payload: []byte("x")} })
		enqueue(t, c, "big", "later", baton.EnqueueOptions{Delay: time.Hour})
		db := batontest.SQLDB(t, dsn)
		analyze := map[string]string{"postgres": "ANALYZE baton_messages", "mysql": "ANALYZE TABLE baton_messages", "sqlite": "ANALYZE"}[b.Name]
		if _, err := db.ExecContext(ctxT(t), analyze); err != nil {
			t.Fatal(err)
		}
		st := stats(t, c, "big")
		if !st.Estimated || st.Claimed != 0 || st.Dead != 0 {
			t.Fatalf("stats %+v: want the state R estimated, the rest exact", st)
		}
		total := st.Ready + st.Scheduled + st.Retrying
		if b.Name == "sqlite" && total != n+1 {
			t.Fatalf("SQLite counts exactly: ready and scheduled %d, want %d", total, n+1)
		}
		if total < n/2 || total > n*2 {
			t.Fatalf("ready and scheduled estimated as %d, want about %d", total, n+1)
		}
		enqueue(t, c, "small", "one")
		if st := stats(t, c, "small"); st.Estimated || st.Ready != 1 {
			t.Fatalf("a small queue: %+v", st)
		}
	})
}

// TestMessagesList: a queue's messages by state, in claim order, page by
// page along the index.
func TestMessagesList(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		enqueue(t, c, "lq", "p1", baton.EnqueueOptions{Priority: 1})
		enqueue(t, c, "lq", "a")
		enqueue(t, c, "lq", "b")
		enqueue(t, c, "lq", "neg", baton.EnqueueOptions{Priority: -3})
		enqueue(t, c, "lq", "later", baton.EnqueueOptions{Delay: time.Hour})
		enqueue(t, c, "lq", "c")
		s := session(t, c)
		claimed := claim(t, s, "lq", baton.ClaimOptions{}) // "neg", the first in claim order
		if len(claimed) != 1 || string(claimed[0].Payload) != "neg" {
			t.Fatalf("claimed %v", payloads(claimed))
		}
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			ms, next, err := c.ListMessages(ctxT(t), baton.ListOptions{Queue: "lq", State: baton.StateReady, After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if m.State != baton.StateReady || m.Queue != "lq" || m.ClaimedBy != "" {
					t.Fatalf("listed %+v", m)
				}
				got = append(got, string(m.Payload))
			}
			if next == "" {
				break
			}
			if pages > 5 {
				t.Fatal("pages never end")
			}
			after = next
		}
		if strings.Join(got, ",") != "a,b,c,p1" {
			t.Fatalf("ready in claim order: %v, want a,b,c,p1", got)
		}
		sched, next, err := c.ListMessages(ctxT(t), baton.ListOptions{Queue: "lq", State: baton.StateScheduled, Limit: 10})
		if err != nil || next != "" || len(sched) != 1 || string(sched[0].Payload) != "later" || !sched[0].RunAt.After(time.Now().Add(50*time.Minute)) {
			t.Fatalf("scheduled: %+v %q %v", sched, next, err)
		}
		cl, _, err := c.ListMessages(ctxT(t), baton.ListOptions{Queue: "lq", State: baton.StateClaimed, Limit: 10})
		if err != nil || len(cl) != 1 || cl[0].ClaimedBy != s.ID() || cl[0].Attempt != 1 || cl[0].ClaimedUntil.IsZero() {
			t.Fatalf("claimed: %+v %v", cl, err)
		}
		for _, bad := range []baton.ListOptions{{Queue: "lq", State: "gone", Limit: 10},
			{Queue: "lq", State: baton.StateReady, After: "x.y", Limit: 10}, {Queue: "lq", State: baton.StateReady, Limit: 1001}} {
			_, _, err := c.ListMessages(ctxT(t), bad)
			wantErr(t, err, baton.ErrInvalid)
		}
		// A queue nothing was enqueued to lists nothing.
		if ms, next, err := c.ListMessages(ctxT(t), baton.ListOptions{Queue: "nope", State: baton.StateReady, Limit: 10}); err != nil || len(ms) != 0 || next != "" {
			t.Fatalf("an unknown queue listed %v %q %v", ms, next, err)
		}
	})
}

// TestEnqueueManyRoundTrip: a batch (one statement where the backend can)
// keeps every message's fields, returns ids in the batch's order, rising,
// and is served in that order within a priority.
func TestEnqueueManyRoundTrip(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		msgs := []baton.NewMessage{
			{Payload: []byte("a"), EnqueueOptions: baton.EnqueueOptions{Key: "k1", MaxAttempts: 3}},
			{Payload: []byte{0, 1, 255}},
			{Payload: []byte("later"), EnqueueOptions: baton.EnqueueOptions{Delay: time.Hour}},
			{Payload: []byte("urgent"), EnqueueOptions: baton.EnqueueOptions{Priority: -5, Timeout: time.Minute}},
			{Payload: []byte("c"), EnqueueOptions: baton.EnqueueOptions{Key: ""}},
		}
		ids, err := c.EnqueueMany(ctxT(t), "rt", msgs)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != len(msgs) {
			t.Fatalf("%d ids for %d messages", len(ids), len(msgs))
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("ids %v do not rise in the batch's order", ids)
			}
		}
		s, err := c.NewSession(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctxT(t))
		got := claim(t, s, "rt", baton.ClaimOptions{Max: 10})
		want := []int{3, 0, 1, 4} // priority first, then the batch's order; the delayed one waits
		if len(got) != len(want) {
			t.Fatalf("claimed %d messages, want %d", len(got), len(want))
		}
		for i, w := range want {
			m, in := got[i], msgs[w]
			if m.ID != ids[w] || string(m.Payload) != string(in.Payload) || m.Key != in.Key || m.Priority != in.Priority {
				t.Fatalf("claim %d: got id %d payload %q key %q priority %d, want message %d (%d %q %q %d)",
					i, m.ID, m.Payload, m.Key, m.Priority, w, ids[w], in.Payload, in.Key, in.Priority)
			}
		}
		if got[1].MaxAttempts != 3 {
			t.Fatalf("attempt limit %d, want 3", got[1].MaxAttempts)
		}
		ack(t, s, got...)
		// Metadata (here the per-message timeout) survives the batch.
		if _, err := c.EnqueueMany(ctxT(t), "tm", []baton.NewMessage{
			{Payload: []byte("x"), EnqueueOptions: baton.EnqueueOptions{Timeout: time.Hour}},
			{Payload: []byte("y"), EnqueueOptions: baton.EnqueueOptions{Timeout: time.Hour}},
		}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()
		err = c.Work(ctx, "tm", func(hctx context.Context, m *baton.Message) error {
			defer cancel()
			if _, ok := hctx.Deadline(); !ok {
				t.Errorf("message %q: the handler has no deadline; its timeout was lost", m.Payload)
			}
			return nil
		}, baton.WorkerOptions{})
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	})
}

// TestQueueWorkerRenewsLongHandler: a handler that runs for three times
// its claim's lease keeps the claim (the worker renews it while the
// handler runs): another client finds nothing to claim all along, and the
// message is acknowledged once, by the worker.
func TestQueueWorkerRenewsLongHandler(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		other := openDSN(t, dsn, fastRetry)
		ctx := ctxT(t)
		enqueue(t, c, "long", "slow")
		const lease = time.Second
		started, release := make(chan struct{}), make(chan struct{})
		var runs atomic.Int32
		werr := make(chan error, 1)
		go func() {
			werr <- c.Work(ctx, "long", func(ctx context.Context, m *baton.Message) error {
				if runs.Add(1) == 1 {
					close(started)
				}
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}, baton.WorkerOptions{Visibility: lease, Drain: true})
		}()
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the handler never started")
		}
		s, err := other.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if ms := claim(t, s, "long", baton.ClaimOptions{}); len(ms) > 0 {
				t.Fatalf("another client claimed message %d while its handler ran: the claim was not renewed", ms[0].ID)
			}
		}
		close(release)
		if err := <-werr; err != nil {
			t.Fatal(err)
		}
		if n := runs.Load(); n != 1 {
			t.Fatalf("the handler ran %d times, want 1", n)
		}
		if st := stats(t, c, "long"); st.Unfinished()+st.Dead != 0 {
			t.Fatalf("the queue still holds %+v", st)
		}
	})
}

// TestPauseQueue: a paused queue keeps its messages and no claim, in any
// mode and any process, takes one; resuming wakes waiting consumers.
func TestPauseQueue(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		other := openDSN(t, dsn, baton.Options{PollInterval: 50 * time.Millisecond})
		ctx := ctxT(t)
		enqueue(t, c, "pq", "one", baton.EnqueueOptions{Key: "k"})
		if err := c.SetQueuePaused(ctx, "pq", true); err != nil {
			t.Fatal(err)
		}
		if st := stats(t, c, "pq"); !st.Paused || st.Ready != 1 {
			t.Fatalf("paused stats %+v", st)
		}
		enqueue(t, c, "pq", "two")
		s := session(t, other)
		for _, mode := range []baton.QueueMode{baton.Parallel, baton.Ordered, baton.PerKey} {
			if _, err := s.Claim(ctx, "pq", baton.ClaimOptions{Mode: mode, Max: 10}); !errors.Is(err, baton.ErrEmpty) {
				t.Fatalf("claim (mode %v) from a paused queue: %v, want ErrEmpty", mode, err)
			}
		}
		got := make(chan []*baton.Message, 1)
		go func() {
			ms, _ := s.Claim(context.Background(), "pq", baton.ClaimOptions{Max: 10, Wait: 30 * time.Second})
			got <- ms
		}()
		for deadline := time.Now().Add(10 * time.Second); baton.QueueWaiters(other, "pq") == 0; {
			if time.Now().After(deadline) {
				t.Fatal("the consumer never waited")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := c.SetQueuePaused(ctx, "pq", false); err != nil {
			t.Fatal(err)
		}
		select {
		case ms := <-got:
			if strings.Join(payloads(ms), ",") != "one,two" {
				t.Fatalf("after resume: %v", payloads(ms))
			}
		case <-time.After(20 * time.Second):
			t.Fatal("resuming did not wake the waiting consumer")
		}
		if st := stats(t, c, "pq"); st.Paused {
			t.Fatalf("resumed stats %+v", st)
		}
		wantErr(t, c.SetQueuePaused(ctx, "never-used", true), baton.ErrUnknownQueue)
		if err := c.SetQueuePaused(ctx, "pq", false); err != nil { // already running: no error
			t.Fatal(err)
		}
	})
}

// TestWorkStoppedBeforeItBegan: a worker whose context has ended before
// its session started stops gracefully (nil, as any other stop) and leaves
// no session behind.
func TestWorkStoppedBeforeItBegan(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx, cancel := context.WithCancel(ctxT(t))
		cancel()
		err := c.Work(ctx, "early", func(context.Context, *baton.Message) error { return nil }, baton.WorkerOptions{})
		if err != nil {
			t.Fatalf("Work with an ended context: %v, want nil", err)
		}
		if ss, err := c.Sessions(ctxT(t)); err != nil || len(ss) != 0 {
			t.Fatalf("sessions after the stop: %v %v, want none", ss, err)
		}
	})
}
