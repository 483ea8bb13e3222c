package baton_test

import (
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestLockReentrySkipsContention: a call on a lock its session already
// holds in a mode that covers it (a re-entry: anything under a write
// lock, a read under a read lock) goes straight to the request, which
// grants it at once with a token of its own: no fast attempt, contention
// read or turnstile call, each of which the session's own holder would
// refuse. A read lock's upgrade is no re-entry (it can wait); a release
// of one instance of several keeps the hint, a release of the last one
// forgets it, so that the next call takes the usual path.
func TestLockReentrySkipsContention(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := open(t, b)
		ctx := ctxT(t)
		s, other := session(t, c), session(t, c)
		steps := func() int64 { return baton.LockContentionSteps(c) }
		lock := func(m baton.Mode, timeout time.Duration, name string) (ran int64, token int64) {
			t.Helper()
			before := steps()
			g, err := s.Lock(ctx, "ns", m, timeout, name)
			if err != nil {
				t.Fatalf("lock %v %s (timeout %v): %v", m, name, timeout, err)
			}
			return steps() - before, g[0].Token
		}
		for _, timeout := range []time.Duration{0, time.Second} {
			if ran, _ := lock(baton.Write, timeout, "x"); ran == 0 {
				t.Fatalf("timeout %v: the first instance ran no fast attempt", timeout)
			}
			tokens := map[int64]bool{}
			for _, m := range []baton.Mode{baton.Write, baton.Read, baton.Write} {
				ran, token := lock(m, timeout, "x")
				if ran != 0 {
					t.Fatalf("timeout %v: a %v re-entry under a write lock ran %d contention steps, want none", timeout, m, ran)
				}
				tokens[token] = true
			}
			if got := len(held(t, c, s)); got != 4 || len(tokens) != 3 {
				t.Fatalf("timeout %v: %d instances shown, %d tokens; want 4 and 3", timeout, got, len(tokens))
			}
			_, err := other.Lock(ctx, "ns", baton.Read, 0, "x")
			wantErr(t, err, baton.ErrTimeout)
			if n, err := s.Release(ctx, "ns"); n != 4 || err != nil {
				t.Fatalf("timeout %v: released %d, %v; want 4", timeout, n, err)
			}
			mustLock(t, other, "ns", baton.Write, "x")
			release(t, other, "ns")
		}

		// Under a read lock a read is a re-entry, a write (the upgrade) is
		// not.
		lock(baton.Read, 0, "y")
		if ran, _ := lock(baton.Read, 0, "y"); ran != 0 {
			t.Fatalf("a read re-entry under a read lock ran %d contention steps", ran)
		}
		if ran, _ := lock(baton.Write, 0, "y"); ran == 0 {
			t.Fatal("an upgrade ran no contention step: taken for a re-entry")
		}
		release(t, s, "ns")

		// RELEASE_LOCK of one instance of two keeps the hint (one is
		// left: the next call on the name is a re-entry still); the
		// release of the last one forgets it, and the next call takes
		// the usual path. Each count and answer as MySQL's.
		for i := 0; i < 2; i++ {
			if ok, err := s.GetLock(ctx, "u", 0); !ok || err != nil {
				t.Fatalf("get %d: %v %v", i, ok, err)
			}
		}
		releaseOne := func(what string) {
			t.Helper()
			if r, err := s.ReleaseLock(ctx, "u"); r != baton.Released || err != nil {
				t.Fatalf("%s: %v %v", what, r, err)
			}
		}
		get := func(what string) (ran int64) {
			t.Helper()
			before := steps()
			if ok, err := s.GetLock(ctx, "u", 0); !ok || err != nil {
				t.Fatalf("%s: %v %v", what, ok, err)
			}
			return steps() - before
		}
		releaseOne("the release of one instance of two")
		if ran := get("a get with one instance left"); ran != 0 {
			t.Fatalf("a get with one instance left ran %d contention steps, want none (a re-entry)", ran)
		}
		releaseOne("the first release of two")
		releaseOne("the last release")
		if ran := get("a get after the last release"); ran == 0 {
			t.Fatal("a get after the last release ran no contention step: the hint outlived the release")
		}
		releaseOne("the release of the new instance")
		if r, err := s.ReleaseLock(ctx, "u"); r != baton.NotHeld || err != nil {
			t.Fatalf("a third release: %v %v, want not held", r, err)
		}
	})
}
