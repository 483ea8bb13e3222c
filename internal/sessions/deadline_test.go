package sessions_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
	_ "github.com/batonhq/baton/driver/sqlite" // the sqlite: scheme
	"github.com/batonhq/baton/internal/batontest"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/sessions"
)

// clock is a clock the test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// slowRenewals is a driver whose renewals' replies take reply on the
// test's clock: each renewal runs on the database, then the clock moves.
type slowRenewals struct {
	driver.Driver
	clk   *clock
	reply time.Duration
}

// Sessions is the driver's, with slowRenewals' heartbeat.
func (d slowRenewals) Sessions() driver.Sessions { return slowSessions{d.Driver.Sessions(), d} }

type slowSessions struct {
	driver.Sessions
	d slowRenewals
}

func (s slowSessions) SessionHeartbeat(ctx context.Context, p driver.HeartbeatParams) (int, []driver.SessionRef, error) {
	n, refs, err := s.Sessions.SessionHeartbeat(ctx, p)
	s.d.clk.set(s.d.clk.Now().Add(s.d.reply))
	return n, refs, err
}

// TestDeadlineRule: a session's local deadline is the start of its last
// successful renewal (or of its insert) plus the lease, minus the margin,
// on the client's clock: never the end of the renewal, and never the full
// lease. The database frees a session's locks a full lease after it
// stamped the renewal, which is after the start and may be well before
// the reply arrives; a deadline counted from the reply would let another
// process be granted the locks while their holder still counts itself
// live.
func TestDeadlineRule(t *testing.T) {
	ctx := context.Background()
	d := batontest.Prepared(t, batontest.SQLiteDSN(t))
	const (
		leaseFor  = 10 * time.Second
		heartbeat = 3 * time.Second
		reply     = 5 * time.Second // a renewal's reply this late
	)
	margin := sessions.Margin(leaseFor, heartbeat)
	clk := &clock{now: time.Now()}
	k := sessions.NewKeeper(sessions.Config{
		Driver: slowRenewals{Driver: d, clk: clk, reply: reply}, ClientID: "client", Lease: leaseFor, Heartbeat: heartbeat,
		EndSession:  func(context.Context, string) error { return nil },
		SessionLost: func() {}, Log: func(string, error) {}, Now: clk.Now,
	})
	live := func(s *sessions.Session, at time.Time, want bool, what string) {
		t.Helper()
		clk.set(at)
		err := s.Check()
		switch {
		case want && err != nil:
			t.Fatalf("%s: lost: %v", what, err)
		case !want && !errors.Is(err, errs.ErrSessionLost):
			t.Fatalf("%s: %v, want it lost (ErrSessionLost)", what, err)
		}
	}

	// The insert: the deadline counts from its start.
	t0 := clk.Now()
	s1, err := k.Begin(ctx, "s1", "test")
	if err != nil {
		t.Fatal(err)
	}
	live(s1, t0.Add(leaseFor-margin-time.Millisecond), true, "just before start of the insert + lease - margin")
	live(s1, t0.Add(leaseFor-margin), false, "at start of the insert + lease - margin")

	// A renewal whose reply comes 5 s after it started: the deadline
	// counts from the start.
	clk.set(t0)
	s2, err := k.Begin(ctx, "s2", "test")
	if err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(time.Second)
	clk.set(t1)
	if err := k.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if got := clk.Now(); !got.Equal(t1.Add(reply)) {
		t.Fatalf("the renewal's reply came at %v, want %v", got.Sub(t0), t1.Add(reply).Sub(t0))
	}
	live(s2, t1.Add(leaseFor-margin-time.Millisecond), true, "just before start of the renewal + lease - margin (the renewal moved the deadline)")
	live(s2, t1.Add(leaseFor-margin), false, "at start of the renewal + lease - margin")
}
