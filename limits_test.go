package baton_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

func setLimits(t *testing.T, c *baton.Client, q string, l baton.QueueLimits) {
	t.Helper()
	if err := c.SetQueueLimits(ctxT(t), q, l); err != nil {
		t.Fatalf("set limits %+v: %v", l, err)
	}
}

// TestQueueLimitsSet: limits are stored, read back, replaced and cleared;
// bad ones are refused with ErrInvalid naming the problem, an unknown
// queue with ErrUnknownQueue, and nothing is half done.
func TestQueueLimitsSet(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		if err := c.SetQueueLimits(ctx, "nope", baton.QueueLimits{Concurrency: 1}); !errors.Is(err, baton.ErrUnknownQueue) {
			t.Fatalf("unknown queue: %v", err)
		}
		if _, err := c.QueueLimits(ctx, "nope"); !errors.Is(err, baton.ErrUnknownQueue) {
			t.Fatalf("unknown queue's limits: %v", err)
		}
		enqueue(t, c, "lq", "x")
		if l, err := c.QueueLimits(ctx, "lq"); err != nil || !l.IsZero() {
			t.Fatalf("limits of a new queue: %+v, %v", l, err)
		}
		want := baton.QueueLimits{Concurrency: 5, PartitionBy: "arg:tenant", PartitionConcurrency: 2,
			Rate: 100, PartitionRate: 10, Per: time.Minute}
		setLimits(t, c, "lq", want)
		setLimits(t, c, "lq", want) // the same again (MySQL: no row changed)
		if l, err := c.QueueLimits(ctx, "lq"); err != nil || l != want {
			t.Fatalf("limits read back: %+v, %v; want %+v", l, err, want)
		}
		if st, err := c.Stats(ctx, "lq"); err != nil || st.Limits != want || st.Ready != 1 {
			t.Fatalf("stats: %+v, %v; want limits %+v and one ready", st, err, want)
		}
		for _, bad := range []baton.QueueLimits{
			{Concurrency: -1},
			{PartitionBy: "key"},
			{PartitionConcurrency: 1},
			{PartitionBy: "color", PartitionConcurrency: 1},
			{PartitionBy: "arg:", PartitionConcurrency: 1},
			{Rate: 1},
			{Rate: 1, Per: time.Microsecond},
			{Rate: 1, Per: 8 * 24 * time.Hour},
			{Per: time.Second},
			{PartitionBy: "kind", PartitionRate: 1},
		} {
			err := c.SetQueueLimits(ctx, "lq", bad)
			if !errors.Is(err, baton.ErrInvalid) {
				t.Fatalf("limits %+v: %v, want ErrInvalid", bad, err)
			}
			t.Logf("%+v: %v", bad, err)
		}
		if l, _ := c.QueueLimits(ctx, "lq"); l != want {
			t.Fatalf("refused limits changed them: %+v", l)
		}
		setLimits(t, c, "lq", baton.QueueLimits{})
		if l, _ := c.QueueLimits(ctx, "lq"); !l.IsZero() {
			t.Fatalf("cleared limits: %+v", l)
		}
		if st, err := c.Stats(ctx, "lq"); err != nil || !st.Limits.IsZero() {
			t.Fatalf("stats after the limits were cleared: %+v, %v", st, err)
		}
	})
}

// TestQueueLimitConcurrency: three clients' workers of 4 handlers each on
// a queue limited to 2 never run more than 2 handlers at once, and do run
// 2 (the whole limit is used while messages wait); every message runs.
func TestQueueLimitConcurrency(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		// Alone, and beside a rate that is not the bottleneck (another
		// claim path).
		for _, l := range []baton.QueueLimits{{Concurrency: 2}, {Concurrency: 2, Rate: 1_000_000, Per: time.Second}} {
			t.Run(fmt.Sprint(l.Rate), func(t *testing.T) { limitConcurrency(t, b, l) })
		}
	})
}

// limitConcurrency is TestQueueLimitConcurrency with the limits l.
func limitConcurrency(t *testing.T, b batontest.Backend, l baton.QueueLimits) {
	{
		c, dsn := openQ(t, b)
		ctx := ctxT(t)
		const n = 24
		batch := make([]baton.NewMessage, n)
		for i := range batch {
			batch[i].Payload = fmt.Appendf(nil, "%d", i)
		}
		if _, err := c.EnqueueMany(ctx, "lim", batch); err != nil {
			t.Fatal(err)
		}
		setLimits(t, c, "lim", l)
		var running, peak, done atomic.Int64
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		var wg sync.WaitGroup
		for range 3 {
			wc := openDSN(t, dsn, baton.Options{PollInterval: 100 * time.Millisecond})
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = wc.Work(wctx, "lim", func(ctx context.Context, m *baton.Message) error {
					r := running.Add(1)
					for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
					}
					time.Sleep(20 * time.Millisecond) // the handler's work
					running.Add(-1)
					done.Add(1)
					return nil
				}, baton.WorkerOptions{Concurrency: 4})
			}()
		}
		waitForSeen(t, "every message handled", func() (bool, string) {
			return done.Load() == n, fmt.Sprintf("%d handled, peak %d", done.Load(), peak.Load())
		})
		stop()
		wg.Wait()
		if p := peak.Load(); p != 2 {
			t.Fatalf("at most %d handlers ran at once, want exactly 2 (the limit, used)", p)
		}
	}
}

// TestQueueLimitPartitions: a partitioned limit holds per key, per kind
// and per argument; a full partition does not hold back the messages of
// other partitions queued behind it; a queue-wide limit holds beside it;
// a settled message frees its partition's slot.
func TestQueueLimitPartitions(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, s := openQS(t, b)
		ctx := ctxT(t)
		for _, by := range []string{"key", "kind", "arg:tenant"} {
			q := "part" + map[string]string{"key": "k", "kind": "n", "arg:tenant": "a"}[by]
			// Ten of partition a first, then three each of b and c, and
			// three without a partition.
			var batch []baton.NewMessage
			add := func(p string, n int) {
				for range n {
					m := baton.NewMessage{Payload: []byte(`{"other":1}`)}
					if p != "" {
						switch by {
						case "key":
							m.Key = p
						case "kind":
							m.Kind = p
						default:
							m.Payload = fmt.Appendf(nil, `{"tenant":%q}`, p)
						}
					}
					batch = append(batch, m)
				}
			}
			add("a", 10)
			add("b", 3)
			add("c", 3)
			add("", 3)
			if _, err := c.EnqueueMany(ctx, q, batch); err != nil {
				t.Fatal(err)
			}
			part := func(m *baton.Message) string {
				switch by {
				case "key":
					return m.Key
				case "kind":
					return m.Kind
				}
				var v struct{ Tenant string }
				_ = json.Unmarshal(m.Payload, &v)
				return v.Tenant
			}
			parts := func(ms []*baton.Message) []string {
				var out []string
				for _, m := range ms {
					out = append(out, part(m))
				}
				slices.Sort(out)
				return out
			}
			setLimits(t, c, q, baton.QueueLimits{PartitionBy: by, PartitionConcurrency: 1})
			got := claim(t, s, q, baton.ClaimOptions{Max: 10})
			if p := parts(got); !slices.Equal(p, []string{"", "a", "b", "c"}) {
				t.Fatalf("%s: first claim took partitions %q, want one of each", by, p)
			}
			if more := claim(t, s, q, baton.ClaimOptions{Max: 10}); len(more) != 0 {
				t.Fatalf("%s: every partition is full, yet a claim took %q", by, parts(more))
			}
			// Settle a's: the next a may go, and only it.
			for _, m := range got {
				if part(m) == "a" {
					if err := s.Ack(ctx, m); err != nil {
						t.Fatal(err)
					}
				}
			}
			if more := claim(t, s, q, baton.ClaimOptions{Max: 10}); !slices.Equal(parts(more), []string{"a"}) {
				t.Fatalf("%s: after a's ack a claim took %q, want one a", by, parts(more))
			}
			// With a queue-wide limit of 5 beside it: one more only.
			setLimits(t, c, q, baton.QueueLimits{Concurrency: 5, PartitionBy: by, PartitionConcurrency: 3})
			if more := claim(t, s, q, baton.ClaimOptions{Max: 10}); len(more) != 1 {
				t.Fatalf("%s: with 4 running and a limit of 5 a claim took %d", by, len(more))
			}
			if st := stats(t, c, q); st.Claimed != 5 {
				t.Fatalf("%s: %d running, want 5", by, st.Claimed)
			}
		}
	})
}

// TestQueueLimitSlotComesBack: a session that ends without settling its
// claims (closed, or killed: its lease runs out) gives its slots back: the
// next claim takes them.
func TestQueueLimitSlotComesBack(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		ctx := ctxT(t)
		for i := range 6 {
			enqueue(t, c, "slot", fmt.Sprint(i))
		}
		setLimits(t, c, "slot", baton.QueueLimits{Concurrency: 2})
		s1 := session(t, c)
		if got := claim(t, s1, "slot", baton.ClaimOptions{Max: 5}); len(got) != 2 {
			t.Fatalf("first claim took %d, want the limit, 2", len(got))
		}
		s2 := session(t, c)
		if got := claim(t, s2, "slot", baton.ClaimOptions{Max: 5}); len(got) != 0 {
			t.Fatalf("a full queue gave %d", len(got))
		}
		if err := s1.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if got := claim(t, s2, "slot", baton.ClaimOptions{Max: 5, Wait: 10 * time.Second}); len(got) != 2 {
			t.Fatalf("after the holder closed a claim took %d, want 2", len(got))
		}
		// A killed process: its renewals stop, its lease runs out, and a
		// waiting claim of another client takes its slots.
		other := openDSN(t, dsn, baton.Options{Lease: time.Second})
		s3 := session(t, other)
		if got := claim(t, s2, "slot", baton.ClaimOptions{Max: 5}); len(got) != 0 {
			t.Fatalf("a full queue gave %d", len(got))
		}
		baton.SwitchRenewals(c, true)
		if got := claim(t, s3, "slot", baton.ClaimOptions{Max: 5, Wait: 20 * time.Second}); len(got) != 2 {
			t.Fatalf("after the holder's lease ran out a claim took %d, want 2", len(got))
		}
	})
}

// TestQueueRateLimit: at most Rate claims start in any window of Per,
// counted across two clients, and the queue still drains (claims that
// wait sleep until the rate lets one start). The starts are read from the
// claims' leases (the database's clock): the claim's ClaimedUntil minus
// its visibility.
func TestQueueRateLimit(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		other := openDSN(t, dsn)
		ctx := ctxT(t)
		const n, rate, per, vis = 9, 3, 600 * time.Millisecond, time.Minute
		for i := range n {
			enqueue(t, c, "rate", fmt.Sprint(i))
		}
		setLimits(t, c, "rate", baton.QueueLimits{Rate: rate, Per: per})
		var mu sync.Mutex
		var starts []time.Time
		var wg sync.WaitGroup
		for _, cl := range []*baton.Client{c, other} {
			s := session(t, cl)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					ms, err := s.Claim(ctx, "rate", baton.ClaimOptions{Max: 2, Visibility: vis, Wait: 3 * time.Second})
					if errors.Is(err, baton.ErrEmpty) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, m := range ms {
						starts = append(starts, m.ClaimedUntil.Add(-vis))
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(starts) != n {
			t.Fatalf("%d of %d messages claimed", len(starts), n)
		}
		slices.SortFunc(starts, time.Time.Compare)
		// The claim's stamp comes a moment after the rate's own (the same
		// transaction): a window a fifth shorter than Per allows for it.
		for i, t0 := range starts {
			in := 0
			for _, t1 := range starts[i:] {
				if t1.Sub(t0) < per*4/5 {
					in++
				}
			}
			if in > rate {
				t.Fatalf("%d starts within %v of %v, more than the rate %d: %v", in, per*4/5, t0, rate, starts)
			}
		}
	})
}

// TestQueueLimitStaleProcess: a process that claimed from a queue before
// it had limits, and was not told of them, cannot claim over them: its
// one-statement claim refuses a limited queue in SQL and it finds the
// limits then. Cleared limits are found the same way.
func TestQueueLimitStaleProcess(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		admin := openDSN(t, dsn)
		ctx := ctxT(t)
		for i := range 8 {
			enqueue(t, c, "stale", fmt.Sprint(i))
		}
		s := session(t, c)
		if got := claim(t, s, "stale", baton.ClaimOptions{Max: 1}); len(got) != 1 {
			t.Fatalf("unlimited claim took %d", len(got))
		}
		setLimits(t, admin, "stale", baton.QueueLimits{Concurrency: 3})
		if got := claim(t, s, "stale", baton.ClaimOptions{Max: 10}); len(got) != 2 {
			t.Fatalf("a claim of a process that did not know the limit took %d, want 2 (limit 3, 1 running)", len(got))
		}
		if got := claim(t, s, "stale", baton.ClaimOptions{Max: 10}); len(got) != 0 {
			t.Fatalf("over the limit a claim took %d", len(got))
		}
		if err := admin.SetQueueLimits(ctx, "stale", baton.QueueLimits{}); err != nil {
			t.Fatal(err)
		}
		if got := claim(t, s, "stale", baton.ClaimOptions{Max: 10}); len(got) != 5 {
			t.Fatalf("after the limits were cleared a claim took %d, want the 5 left", len(got))
		}
	})
}

// TestQueueLimitsTx: SetQueueLimitsTx sets the limits if and only if the
// caller's transaction commits; a waiting consumer of another client,
// held back by the limit, wakes once a commit raises it.
func TestQueueLimitsTx(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		db := batontest.SQLDB(t, dsn)
		ctx := ctxT(t)
		for i := range 3 {
			enqueue(t, c, "ltx", fmt.Sprint(i))
		}
		want := baton.QueueLimits{Concurrency: 1}
		for _, commit := range []bool{false, true} {
			tx := begin(t, db)
			if err := c.SetQueueLimitsTx(ctx, tx, "ltx", want); err != nil {
				t.Fatal(err)
			}
			endTx(t, tx, commit)
			l, err := c.QueueLimits(ctx, "ltx")
			if err != nil || (l == want) != commit {
				t.Fatalf("after %s: limits %+v, %v", map[bool]string{true: "commit", false: "rollback"}[commit], l, err)
			}
		}
		bad := begin(t, db)
		if err := c.SetQueueLimitsTx(ctx, bad, "ltx", baton.QueueLimits{Rate: 1}); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("a rate without a period in a transaction: %v", err)
		}
		endTx(t, bad, false) // SQLite: the transaction holds the write lock
		other := openDSN(t, dsn)
		s := session(t, other)
		if got := claim(t, s, "ltx", baton.ClaimOptions{Max: 3}); len(got) != 1 {
			t.Fatalf("under a limit of 1 a claim took %d", len(got))
		}
		got := make(chan int, 1)
		go func() {
			ms, _ := s.Claim(ctx, "ltx", baton.ClaimOptions{Max: 3, Wait: 20 * time.Second})
			got <- len(ms)
		}()
		tx := begin(t, db)
		if err := c.SetQueueLimitsTx(ctx, tx, "ltx", baton.QueueLimits{Concurrency: 3}); err != nil {
			t.Fatal(err)
		}
		endTx(t, tx, true)
		if n := <-got; n != 2 {
			t.Fatalf("after the limit was raised the waiting claim took %d, want 2", n)
		}
	})
}
