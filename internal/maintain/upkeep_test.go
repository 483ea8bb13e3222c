package maintain

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

// In a client with MaxConns no service but the lease renewal may hold a
// connection longer than a heartbeat.
func TestLimitedUpkeepBoundsTimeouts(t *testing.T) {
	run := func(context.Context) error { return nil }
	for _, limited := range []bool{false, true} {
		g := upkeep{Group: NewGroup(slog.New(&recorder{})), limited: limited, hb: time.Second}
		g.add(Service{Name: renewal, Interval: time.Second, Timeout: 3 * time.Second, Run: run})
		g.add(Service{Name: "sweep", Interval: time.Minute, Timeout: 3 * time.Second, Run: run})
		g.add(Service{Name: "poll", Interval: 100 * time.Millisecond, Run: run})
		want := []time.Duration{3 * time.Second, 3 * time.Second, 100 * time.Millisecond}
		if limited {
			want = []time.Duration{3 * time.Second, time.Second, 100 * time.Millisecond}
		}
		for i, s := range g.services {
			if s.Timeout != want[i] {
				t.Errorf("limited %v: %s's timeout %v, want %v", limited, s.Name, s.Timeout, want[i])
			}
		}
	}
}

// A rescue runs at most once per RescueGap poll intervals, and reports
// whether it freed anything.
func TestRescuerGap(t *testing.T) {
	var lists, recovers int
	r := NewRescuer(RescuerConfig{PollInterval: 20 * time.Millisecond,
		ListReapable: func(context.Context) ([]driver.SessionRef, error) { lists++; return nil, nil },
		Reap:         func(context.Context, []driver.SessionRef) int { return 0 },
		RecoverStale: func(context.Context) (int, error) { recovers++; return 1, nil },
		Log:          func(string, error) {}})
	ctx := context.Background()
	if !r.Rescue(ctx) {
		t.Fatal("first rescue freed nothing")
	}
	if r.Rescue(ctx) || lists != 1 || recovers != 1 {
		t.Fatalf("second rescue within the gap ran: %d lists, %d recovers", lists, recovers)
	}
	time.Sleep(RescueGap * 20 * time.Millisecond)
	if !r.Rescue(ctx) || lists != 2 {
		t.Fatalf("rescue after the gap: %d lists", lists)
	}
}

// A rescue whose look for dead sessions fails logs it and recovers
// nothing.
func TestRescuerListFails(t *testing.T) {
	var logged []string
	r := NewRescuer(RescuerConfig{PollInterval: time.Second,
		ListReapable: func(context.Context) ([]driver.SessionRef, error) { return nil, errors.New("away") },
		Reap:         func(context.Context, []driver.SessionRef) int { t.Error("reaped"); return 0 },
		RecoverStale: func(context.Context) (int, error) { t.Error("recovered"); return 0, nil },
		Log:          func(what string, err error) { logged = append(logged, what) }})
	if r.Rescue(context.Background()) || len(logged) != 1 {
		t.Fatalf("logged %q", logged)
	}
}

// Log.Err logs failures, not cancellations.
func TestLogErr(t *testing.T) {
	rec := &recorder{}
	l := Log{L: slog.New(rec)}
	l.Err("renew", nil)
	l.Err("renew", context.Canceled)
	l.Err("renew", errors.New("away"))
	if got := rec.levels("baton: renew: away"); len(got) != 1 || got[0] != slog.LevelWarn || len(rec.records) != 1 {
		t.Fatalf("records %v", rec.records)
	}
}

// After runs its job at once when told, and never once quit closed.
func TestAfter(t *testing.T) {
	quit, now := make(chan struct{}), make(chan struct{})
	ran := make(chan struct{})
	go After(quit, now, time.Hour, func(context.Context) { close(ran) })
	close(now)
	select {
	case <-ran:
	case <-time.After(time.Minute):
		t.Fatal("After did not run when told")
	}
	close(quit)
	After(quit, make(chan struct{}), time.Hour, func(context.Context) { t.Error("ran after quit") })
}
