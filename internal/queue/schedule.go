package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/maintain"
	"github.com/batonhq/baton/internal/txn"
)

// Schedule is a registered periodic schedule, as the scheduler runs it.
type Schedule struct {
	Name, Queue string
	// Next is the tick after t.
	Next func(t time.Time) time.Time
	// SkipMissed: a tick that comes after missed ones enqueues nothing.
	SkipMissed bool
	// Message is the message of a tick, with how many ticks before it
	// were missed.
	Message func(tick time.Time, missed int) (driver.NewMessage, error)
}

// schedule is a Schedule with its next tick as last seen.
type schedule struct {
	Schedule
	due time.Time // zero: read the database
}

// Scheduler enqueues the ticks of this client's schedules. Every process
// that adds the same schedule (by name) takes part, and each tick is
// enqueued exactly once among them: the message is inserted in the
// transaction that moves the schedule's last tick forward, which only one
// process can do.
type Scheduler struct {
	e         *Engine
	mu        sync.Mutex
	schedules map[string]*schedule
	added     chan struct{} // wakes the service, idle while there are no schedules
}

// BeforeAdvance maps a schedule's name to a func() run in each of its
// ticks' transactions between reading the last tick and advancing it
// (tests: another process's tick made to come in between). Keyed by name
// so that parallel tests of other schedules do not see each other's.
var BeforeAdvance sync.Map

// NewScheduler makes the scheduler of the engine's schedules.
func NewScheduler(e *Engine) *Scheduler {
	return &Scheduler{e: e, schedules: map[string]*schedule{}, added: make(chan struct{}, 1)}
}

// Add registers a schedule, replacing one of the same name.
func (s *Scheduler) Add(sc Schedule) {
	s.mu.Lock()
	s.schedules[sc.Name] = &schedule{Schedule: sc}
	s.mu.Unlock()
	select {
	case s.added <- struct{}{}: // the service stops while there are none
	default:
	}
}

// Remove unregisters a schedule. A tick enqueued at that moment still
// lands.
func (s *Scheduler) Remove(name string) {
	s.mu.Lock()
	delete(s.schedules, name)
	s.mu.Unlock()
}

// Len is how many schedules are registered.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.schedules)
}

// Service is the scheduler as a service, every interval while it has
// schedules.
func (s *Scheduler) Service(interval, timeout time.Duration) maintain.Service {
	return maintain.Service{Name: "scheduler", Interval: interval, Timeout: timeout, Run: s.Run,
		Idle: func() bool { return s.Len() == 0 }, Resume: s.added}
}

// Run enqueues the due ticks of every schedule. A schedule costs a query
// only when its next tick, as last seen, has come.
func (s *Scheduler) Run(ctx context.Context) error {
	now := time.Now()
	var errs []error
	for _, sc := range s.due(now) {
		if err := s.run(ctx, sc, now); err != nil {
			errs = append(errs, fmt.Errorf("schedule %q: %w", sc.Name, err))
		}
	}
	return errors.Join(errs...)
}

// RunAt runs one tick of the named schedule as if the time were now.
func (s *Scheduler) RunAt(ctx context.Context, name string, now time.Time) error {
	s.mu.Lock()
	sc := s.schedules[name]
	s.mu.Unlock()
	if sc == nil {
		return fmt.Errorf("no schedule %q", name)
	}
	return s.run(ctx, sc, now)
}

// due lists the schedules whose next tick may have come, by name.
func (s *Scheduler) due(now time.Time) []*schedule {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*schedule
	for _, sc := range s.schedules {
		if sc.due.IsZero() || !now.Before(sc.due) {
			out = append(out, sc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// tickRun is what one run of a schedule decided.
type tickRun struct {
	due      time.Time // the next tick after this run
	enqueued bool
}

// run enqueues the schedule's latest due tick, if no process did.
func (s *Scheduler) run(ctx context.Context, sc *schedule, now time.Time) error {
	var run tickRun
	err := txn.InTx(ctx, s.e.drv, func(tx driver.Tx) error {
		var err error
		run, err = s.tick(ctx, tx, sc, now)
		return err
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	sc.due = run.due
	s.mu.Unlock()
	if run.enqueued {
		s.e.Wake(sc.Queue)
	}
	return nil
}

// tick is run's transaction.
func (s *Scheduler) tick(ctx context.Context, tx driver.Tx, sc *schedule, now time.Time) (tickRun, error) {
	last, found, err := tx.ScheduleLast(ctx, sc.Name)
	if err != nil {
		return tickRun{}, err
	}
	if !found {
		// A new schedule: its first tick is the next one.
		return tickRun{due: sc.Next(now)}, tx.ScheduleEnsure(ctx, sc.Name, now.UnixMicro())
	}
	latest, missed := LatestTick(sc.Next, time.UnixMicro(last), now)
	if latest.IsZero() {
		return tickRun{due: sc.Next(time.UnixMicro(last))}, nil
	}
	run := tickRun{due: sc.Next(latest)}
	if h, ok := BeforeAdvance.Load(sc.Name); ok {
		h.(func())()
	}
	advanced, err := tx.ScheduleAdvance(ctx, sc.Name, latest.UnixMicro())
	if err != nil || !advanced {
		return run, err // another process enqueued it
	}
	if sc.SkipMissed && missed > 0 {
		return run, nil // the latest tick came after a missed one: late too
	}
	err = s.enqueue(ctx, tx, sc, latest, missed)
	run.enqueued = err == nil
	return run, err
}

// enqueue inserts the message of a schedule's tick, in tx.
func (s *Scheduler) enqueue(ctx context.Context, tx driver.Tx, sc *schedule, tick time.Time, missed int) error {
	m, err := sc.Message(tick, missed)
	if err != nil {
		return err
	}
	if err := s.e.Register(ctx, tx, sc.Queue); err != nil {
		return err
	}
	_, err = tx.MessageInsert(ctx, m)
	return err
}

// LatestTick is the latest tick after last and at or before now, and how
// many ticks before it were due too (missed); zero when none is due.
func LatestTick(next func(time.Time) time.Time, last, now time.Time) (time.Time, int) {
	var latest time.Time
	n := 0
	for t := next(last); !t.IsZero() && !t.After(now) && n < 1_000_000; t = next(t) {
		latest = t
		n++
	}
	return latest, max(n-1, 0)
}
