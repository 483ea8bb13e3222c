package baton_test

import (
	"context"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// bouncerDSN returns a test database's DSN through the private PgBouncer
// (transaction mode, default settings), without baton's listen_dsn.
func bouncerDSN(t testing.TB) (string, bool) {
	dsn, ok := bouncerListenDSN(t)
	if !ok {
		return "", false
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = ""
	return u.String(), true
}

// bouncerListenDSN is bouncerDSN with listen_dsn, a direct connection for
// LISTEN.
func bouncerListenDSN(t testing.TB) (string, bool) {
	for _, b := range batontest.All() {
		if b.Label == "pgbouncer" {
			return b.NewDSN(t), true
		}
	}
	return "", false
}

// BenchmarkPoolerHandoff: lock hand-off between two clients through
// PgBouncer (transaction mode), wake-ups by LISTEN on listen_dsn; reports
// the p50 from the holder's Release to the waiter's Lock returning.
//
//	go test -run '^$' -bench PoolerHandoff -benchtime 200x .
func BenchmarkPoolerHandoff(b *testing.B) {
	for _, tc := range []struct {
		name   string
		listen bool
	}{{"listen_dsn", true}, {"polling", false}} {
		b.Run(tc.name, func(b *testing.B) {
			dsn, ok := bouncerListenDSN(b)
			if !ok {
				b.Skip("pgbouncer not selected by BATON_TEST_BACKENDS")
			}
			if !tc.listen {
				dsn, _ = bouncerDSN(b)
			}
			ctx := context.Background()
			open := func() *baton.Client {
				c, err := baton.Open(ctx, dsn)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = c.Close() })
				return c
			}
			c1, c2 := open(), open()
			s1, err := c1.NewSession(ctx)
			if err != nil {
				b.Fatal(err)
			}
			s2, err := c2.NewSession(ctx)
			if err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s1.Lock(ctx, "h", baton.Write, 0, "x"); err != nil {
					b.Fatal(err)
				}
				got := make(chan time.Time, 1)
				go func() {
					if _, err := s2.Lock(ctx, "h", baton.Write, baton.Forever, "x"); err != nil {
						b.Error(err)
					}
					got <- time.Now()
				}()
				waitPendingB(b, c1, s2)
				t0 := time.Now()
				if _, err := s1.Release(ctx, "h"); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-got).Sub(t0))
				if _, err := s2.Release(ctx, "h"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_us")
		})
	}
}

// waitPendingB waits until the session has a waiting request.
func waitPendingB(b *testing.B, c *baton.Client, s *baton.Session) {
	for {
		ls, err := c.Locks(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range ls {
			if l.Session == s.ID() && l.Status == "PENDING" {
				return
			}
		}
	}
}

// TestPoolerWithoutListenDSN: through PgBouncer with the DSN of a direct
// connection but the port (no listen_dsn), baton detects the pooler, works,
// and lock waiters are handed the lock (by polling: LISTEN cannot work
// there, which baton says once in its log).
func TestPoolerWithoutListenDSN(t *testing.T) {
	dsn, ok := bouncerDSN(t)
	if !ok {
		t.Skip("pgbouncer not selected by BATON_TEST_BACKENDS")
	}
	opts := baton.Options{PollInterval: 100 * time.Millisecond}
	c1 := openDSN(t, dsn, opts)
	c2 := openDSN(t, dsn, opts)
	s1, s2 := session(t, c1), session(t, c2)
	mustLock(t, s1, "pool", baton.Write, "x")
	got := async(s2, "pool", baton.Write, baton.Forever, "x")
	waitPending(t, c1, s2, 1)
	if _, err := s1.Release(ctxT(t), "pool"); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, got); err != nil {
		t.Fatal(err)
	}
	// Queues too: a waiting claim gets a message enqueued later.
	ch := make(chan error, 1)
	go func() {
		ms, err := s1.Claim(context.Background(), "pq", baton.ClaimOptions{Wait: 15 * time.Second})
		if err == nil && (len(ms) != 1 || string(ms[0].Payload) != "hi") {
			t.Errorf("claimed %v", ms)
		}
		ch <- err
	}()
	if _, err := c2.Enqueue(ctxT(t), "pq", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, ch); err != nil {
		t.Fatal(err)
	}
}

// TestPoolerRefusesSearchPath: a search_path through a transaction pooler
// fails with an error that names it and the fix, not the pooler's words.
func TestPoolerRefusesSearchPath(t *testing.T) {
	dsn, ok := bouncerDSN(t)
	if !ok {
		t.Skip("pgbouncer not selected by BATON_TEST_BACKENDS")
	}
	for _, extra := range []string{"?search_path=app", "?search_path=app&pooler=transaction"} {
		_, err := baton.Open(ctxT(t), dsn+extra)
		wantErr(t, err, baton.ErrBadDSN)
		if !strings.Contains(err.Error(), "search_path") || !strings.Contains(err.Error(), "ALTER ROLE") {
			t.Fatalf("error %v does not name search_path and the fix", err)
		}
	}
}
