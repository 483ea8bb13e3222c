package maintain

import (
	"context"
	"sync"
	"time"

	"github.com/batonhq/baton/driver"
)

// RescuerConfig is what a Rescuer needs of its client.
type RescuerConfig struct {
	// PollInterval is the client's; rescues are at least RescueGap of
	// them apart.
	PollInterval time.Duration
	// ListReapable and Reap find and end dead sessions (lease.Keeper).
	ListReapable func(ctx context.Context) ([]driver.SessionRef, error)
	Reap         func(ctx context.Context, refs []driver.SessionRef) int
	// RecoverStale returns stale claims to their queues.
	RecoverStale func(ctx context.Context) (int, error)
	Log          func(what string, err error)
}

// Rescuer frees what dead sessions hold and returns stale claims to their
// queues on behalf of claims that find nothing, so that a process that
// runs only now and then (a cron drain) picks up a killed worker's
// messages without waiting for some long-running process to reap them.
type Rescuer struct {
	cfg  RescuerConfig
	mu   sync.Mutex
	last time.Time
}

// RescueGap is how many poll intervals pass at least between two rescues
// of a client. A long-running client's lease renewal ends dead sessions
// every heartbeat and its claim rescuer runs every five; an idle
// worker's empty claims (one after each of its own renewals, on SQLite)
// rescued every time, three statements a second for nothing.
const RescueGap = 5

// NewRescuer makes the rescuer of one client.
func NewRescuer(cfg RescuerConfig) *Rescuer { return &Rescuer{cfg: cfg} }

// Rescue rescues, at most once per RescueGap poll intervals, and reports whether it freed
// anything.
func (r *Rescuer) Rescue(ctx context.Context) bool {
	r.mu.Lock()
	if !r.last.IsZero() && time.Since(r.last) < RescueGap*r.cfg.PollInterval {
		r.mu.Unlock()
		return false
	}
	r.last = time.Now()
	r.mu.Unlock()
	refs, err := r.cfg.ListReapable(ctx)
	if err != nil {
		r.cfg.Log("look for dead sessions", err)
		return false
	}
	n := r.cfg.Reap(ctx, refs)
	m, err := r.cfg.RecoverStale(ctx)
	r.cfg.Log("recover stale claims", err)
	return n+m > 0
}
