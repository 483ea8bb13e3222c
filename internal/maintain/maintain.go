// Package maintain runs a client's background upkeep as small services:
// each has a name, an interval and one job, runs on its own goroutine (a
// slow sweep never delays a lease renewal), and reports every failure to
// one log/slog logger. A Group starts them together and stops them
// together.
package maintain

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Service is one piece of upkeep, run every Interval (the first run one
// Interval after Start).
type Service struct {
	// Name says what the service does, in the log ("lease renewal").
	Name     string
	Interval time.Duration
	// Timeout bounds one run (Interval when zero): a run that cannot end
	// in time is abandoned, and the next one starts afresh.
	Timeout time.Duration
	Run     func(ctx context.Context) error
	// Idle, where set, says the service has nothing to do (a scheduler
	// with no schedules): it stops ticking until Resume delivers, because
	// each tick of an idle client's timers wakes the process.
	Idle   func() bool
	Resume <-chan struct{}
}

// Group is a set of services started and stopped together.
type Group struct {
	log      *slog.Logger
	services []Service
	// ctx ends at Stop: the loops end with it, and each run's context is
	// derived from it, which costs no goroutine (Until starts one per
	// call, and an idle client runs a service or two every second).
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool
}

// NewGroup returns an empty group logging to log.
func NewGroup(log *slog.Logger) *Group {
	ctx, cancel := context.WithCancel(context.Background())
	return &Group{log: log, ctx: ctx, cancel: cancel}
}

// Add adds a service; it panics once the group has started, or on a
// service without a name, a positive interval or a job (a programming
// error, never input).
func (g *Group) Add(s Service) {
	if g.started || s.Name == "" || s.Interval <= 0 || s.Run == nil {
		panic("maintain: Add after Start, or a service without name, interval or job")
	}
	if s.Timeout <= 0 {
		s.Timeout = s.Interval
	}
	g.services = append(g.services, s)
}

// Names lists the services in the order they were added.
func (g *Group) Names() []string {
	out := make([]string, len(g.services))
	for i, s := range g.services {
		out[i] = s.Name
	}
	return out
}

// Start starts every service.
func (g *Group) Start() {
	g.started = true
	for _, s := range g.services {
		g.wg.Add(1)
		go g.loop(s)
	}
}

// Stop stops every service and waits for runs in progress to end (their
// contexts are cancelled).
func (g *Group) Stop() {
	g.cancel()
	g.wg.Wait()
}

func (g *Group) loop(s Service) {
	defer g.wg.Done()
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	var st streak
	for {
		if s.Idle != nil && s.Idle() {
			if !g.idle(s, t) {
				return
			}
			continue
		}
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
		}
		g.runOnce(s, &st)
	}
}

// idle stops s's ticker until s resumes; false when the group stops
// first.
func (g *Group) idle(s Service, t *time.Ticker) bool {
	t.Stop()
	select {
	case <-g.ctx.Done():
		return false
	case <-s.Resume:
	}
	t.Reset(s.Interval)
	return true
}

// streak counts the consecutive failures of a service.
type streak struct{ failures int }

// runOnce runs s once and logs the outcome: the first failure of a streak
// as a warning, later ones of the same streak at debug level (a database
// that is away for an hour does not flood the log, and nothing is
// dropped), and the end of a streak as information.
func (g *Group) runOnce(s Service, st *streak) {
	ctx, cancel := context.WithTimeout(g.ctx, s.Timeout)
	defer cancel()
	err := s.Run(ctx)
	switch {
	case err == nil:
		if st.failures > 0 {
			g.log.Info("baton: "+s.Name+" works again", "failures", st.failures)
		}
		st.failures = 0
	case g.ctx.Err() != nil:
		// Stopping: whatever the run met was the stop.
	default:
		st.failures++
		level := slog.LevelWarn
		if st.failures > 1 {
			level = slog.LevelDebug
		}
		g.log.Log(context.Background(), level, "baton: "+s.Name+" failed", "error", err, "failures", st.failures)
	}
}

// Until returns a context that ends after timeout (never when timeout is
// zero or less), when quit is closed, or when cancel is called.
func Until(quit <-chan struct{}, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
	}
	go func() {
		select {
		case <-quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Closed reports whether ch is closed (without blocking).
func Closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Every calls f every interval until stop closes.
func Every(stop <-chan struct{}, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f()
		}
	}
}

// Sleep waits for d; false when ctx ends first.
func Sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
