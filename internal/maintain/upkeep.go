package maintain

import (
	"context"
	"log/slog"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/txn"
)

// Config is a client's upkeep: its timing, and the slices' jobs.
type Config struct {
	Driver driver.Driver
	Logger *slog.Logger
	// Heartbeat, Lease and PollInterval are the client's Options.
	Heartbeat, Lease, PollInterval time.Duration
	// Limited: the client's pool is bounded (Options.MaxConns), and the
	// services share its few connections with the lease renewal.
	Limited bool
	// Renew renews the client's sessions and reaps dead ones of others;
	// Renewed runs after each renewal that succeeded (the client restarts
	// the listener its lock waiters need); EndAbandoned deletes the
	// sessions the client gave up on.
	Renew, EndAbandoned func(ctx context.Context) error
	Renewed             func() error
	// SweepOrphans regrants what orphaned lock rows hold up.
	SweepOrphans func(ctx context.Context) error
	// RecoverStale returns stale claims to their queues; FlushThroughput
	// writes the throughput counts.
	RecoverStale    func(ctx context.Context) (int, error)
	FlushThroughput func(ctx context.Context) error
	// Services are a slice's own services (the queue's scheduler,
	// consumer poll and history pruner), run beside these.
	Services []Service
}

// Upkeep returns the client's services, each on its own interval: a slow
// sweep never delays a lease renewal, and every failure goes to the
// logger. Loss is not decided here: each session's own local deadline
// fires on its own (see internal/sessions), whatever a renewal is blocked
// on.
func Upkeep(cfg Config) *Group {
	hb, lease, d := cfg.Heartbeat, cfg.Lease, cfg.Driver
	g := upkeep{Group: NewGroup(cfg.Logger), limited: cfg.Limited, hb: hb}
	// A renewal that cannot finish before the next tick is no use: the
	// next one starts afresh on another connection. It also reaps: the
	// statement that renews lists the dead sessions of others.
	g.add(Service{Name: renewal, Interval: hb, Run: func(ctx context.Context) error {
		if err := cfg.Renew(ctx); err != nil {
			return err
		}
		return cfg.Renewed()
	}})
	g.add(Service{Name: "lost-session cleanup", Interval: hb, Timeout: lease, Run: cfg.EndAbandoned})
	g.add(Service{Name: "claim rescuer", Interval: 5 * hb, Timeout: lease, Run: func(ctx context.Context) error {
		_, err := cfg.RecoverStale(ctx)
		return err
	}})
	g.add(Service{Name: "orphan sweeper", Interval: 10 * hb, Timeout: lease, Run: cfg.SweepOrphans})
	g.add(Service{Name: "throughput flush", Interval: 10 * hb, Timeout: lease, Run: cfg.FlushThroughput})
	g.add(Service{Name: "idle lock-row purge", Interval: time.Minute, Timeout: lease, Run: func(ctx context.Context) error {
		return txn.InTx(ctx, d, func(tx driver.Tx) error { _, err := tx.LockIdentPurgeIdle(ctx); return err })
	}})
	g.add(Service{Name: "backend upkeep", Interval: time.Minute, Timeout: lease, Run: d.Maintain})
	g.add(Service{Name: "throughput purge", Interval: time.Minute, Timeout: lease, Run: func(ctx context.Context) error {
		return d.NoTx().ThroughputPurge(ctx)
	}})
	for _, s := range cfg.Services {
		g.add(s)
	}
	g.add(Service{Name: "unique-key purge", Interval: time.Minute, Timeout: lease, Run: func(ctx context.Context) error {
		return txn.InTx(ctx, d, func(tx driver.Tx) error { _, err := tx.UniquePurge(ctx); return err })
	}})
	return g.Group
}

// renewal is the lease renewal's name.
const renewal = "lease renewal"

// upkeep adds a client's services. In a client with MaxConns they share
// the pool's few connections with the lease renewal: none may hold one
// longer than a heartbeat (a statement waiting in the server for a row
// lock would otherwise keep the renewal waiting for the connection until
// the session is lost).
type upkeep struct {
	*Group
	limited bool
	hb      time.Duration
}

func (g upkeep) add(s Service) {
	if g.limited && s.Name != renewal {
		if s.Timeout <= 0 || s.Timeout > g.hb {
			s.Timeout = min(s.Interval, g.hb)
		}
	}
	g.Group.Add(s)
}

// After runs f once after delay, or as soon as now is closed, unless quit
// closes first; f's context ends when quit closes.
func After(quit, now <-chan struct{}, delay time.Duration, f func(ctx context.Context)) {
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-quit:
		return
	case <-t.C:
	case <-now:
	}
	ctx, cancel := Until(quit, 0)
	defer cancel()
	f(ctx)
}
