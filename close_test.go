package baton_test

import (
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestSessionCloseReleasesEachNamespace: Close releases what the
// session's calls were granted namespace by namespace before its row
// goes (fast-path holders by their one-statement release), and the
// session's delete takes the rest. Every kind of instance goes (a
// re-entered write lock, a read lock beside another session's, a user
// lock), each waiter gets what it waits for when the rule allows it,
// tokens keep rising, the session's own waiting call ends with
// ErrClosed, and nothing of the session is left in the lock listing.
func TestSessionCloseReleasesEachNamespace(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := open(t, b)
		ctx := ctxT(t)
		s1, s2, s3, s4 := session(t, c), session(t, c), session(t, c), session(t, c)
		first := mustLock(t, s1, "ns1", baton.Write, "a")
		mustLock(t, s1, "ns1", baton.Write, "a")
		mustLock(t, s1, "ns2", baton.Read, "r")
		mustLock(t, s3, "ns2", baton.Read, "r")
		if ok, err := s1.GetLock(ctx, "u", 0); !ok || err != nil {
			t.Fatalf("GetLock: %v %v", ok, err)
		}
		mustLock(t, s3, "ns3", baton.Write, "w")
		own := waiting(t, c, s1, "ns3", baton.Write, baton.Forever, "w")
		onA := waiting(t, c, s2, "ns1", baton.Write, baton.Forever, "a")
		onR := waiting(t, c, s4, "ns2", baton.Write, baton.Forever, "r")

		if err := s1.Close(ctx); err != nil {
			t.Fatal(err)
		}
		wantErr(t, recv(t, own), baton.ErrClosed)
		mustRecv(t, onA)
		if got := held(t, c, s2); len(got) != 1 {
			t.Fatalf("s2 holds %d instances, want 1 (a)", len(got))
		}
		for _, l := range held(t, c, s2) {
			if l.Name == "a" && l.Token <= first[0].Token {
				t.Fatalf("a's token %d after Close, not above the closed session's %d", l.Token, first[0].Token)
			}
		}
		if ok, err := s2.GetLock(ctx, "u", 0); !ok || err != nil {
			t.Fatalf("the closed session's user lock: %v %v", ok, err)
		}
		select {
		case err := <-onR:
			t.Fatalf("a writer got r beside a reader still holding it: %v", err)
		default:
		}
		release(t, s3, "ns2")
		mustRecv(t, onR)
		if got := held(t, c, s1); len(got) != 0 {
			t.Fatalf("the closed session still listed: %+v", got)
		}
	})
}
