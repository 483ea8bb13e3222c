package baton_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// lostCounter is an Observer that counts lost sessions.
type lostCounter struct{ n atomic.Int32 }

func (*lostCounter) HandlerDone(string, string, string, time.Duration) {}
func (*lostCounter) LockWaited(string, time.Duration, bool)            {}
func (*lostCounter) Deadlock()                                         {}
func (l *lostCounter) SessionLost()                                    { l.n.Add(1) }

// TestObserverHearsLostSessions: a session lost for want of renewals is
// reported to the client's Observer once.
func TestObserverHearsLostSessions(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		obs := &lostCounter{}
		c := openDSN(t, dsn, baton.Options{Lease: time.Second, Observer: obs})
		s := session(t, c)
		baton.SwitchRenewals(c, true)
		waitLost(t, s)
		// The observer hears it right after Done closes.
		for deadline := time.Now().Add(10 * time.Second); obs.n.Load() == 0; {
			if time.Now().After(deadline) {
				t.Fatal("the observer never heard the lost session")
			}
			time.Sleep(time.Millisecond)
		}
		if got := obs.n.Load(); got != 1 {
			t.Fatalf("observer heard %d lost sessions, want 1", got)
		}
	})
}
