package baton

import (
	"errors"
	"time"

	"github.com/batonhq/baton/internal/worker"
)

// Observer receives what a client does, for metrics (the package
// github.com/batonhq/baton/metrics implements it with Prometheus). Methods
// are called synchronously on baton's own paths: they must be quick and
// safe for concurrent use. Set it in Options.Observer.
type Observer interface {
	// HandlerDone: a worker's handler returned (or was stopped) after d.
	// outcome is one of OutcomeCompleted, OutcomeRetried, OutcomeDead, OutcomeCancelled,
	// OutcomeSnoozed and OutcomeLost.
	HandlerDone(queue, kind, outcome string, d time.Duration)
	// LockWaited: a lock call (Lock, GetLock) ended after d, granted or
	// not; namespace is "" for user-level locks.
	LockWaited(namespace string, d time.Duration, granted bool)
	// Deadlock: a lock call was chosen as a deadlock's victim.
	Deadlock()
	// SessionLost: one of the client's sessions was lost.
	SessionLost()
}

// Handler outcomes reported to an Observer.
const (
	OutcomeCompleted = "completed" // the handler succeeded
	OutcomeRetried   = "retried"   // it failed and the message will run again
	OutcomeDead      = "dead"      // it failed for good: the dead letters
	OutcomeLost      = "lost"      // the session was lost; the message runs again elsewhere
	OutcomeCancelled = "cancelled" // the message was cancelled while it ran, or by its handler (Cancel)
	OutcomeSnoozed   = "snoozed"   // the handler put it off (Snooze); its attempt is taken back
)

// nopObserver is the default Observer.
type nopObserver struct{}

func (nopObserver) HandlerDone(string, string, string, time.Duration) {}
func (nopObserver) LockWaited(string, time.Duration, bool)            {}
func (nopObserver) Deadlock()                                         {}
func (nopObserver) SessionLost()                                      {}

// outcome classifies a handler's result for an Observer.
func outcome(m *Message, err error, lost bool) string {
	switch {
	case lost:
		return OutcomeLost
	case err == nil:
		return OutcomeCompleted
	case errors.Is(err, ErrCancelled):
		return OutcomeCancelled
	case worker.IsSnooze(err):
		return OutcomeSnoozed
	case errors.Is(err, ErrPermanent) || m.Attempt >= m.MaxAttempts:
		return OutcomeDead
	}
	return OutcomeRetried
}
