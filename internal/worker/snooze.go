package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/errs"
)

// SnoozeError is a handler's request to put its message off for Delay
// without using an attempt: the message goes back to its queue, due Delay
// from now, and its next run has the same attempt number.
type SnoozeError struct{ Delay time.Duration }

func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %v", e.Delay) }

// Snoozed reports whether err asks for a snooze (it is or wraps a
// *SnoozeError), and for how long.
func Snoozed(err error) (time.Duration, bool) {
	var s *SnoozeError
	if err == nil || !errors.As(err, &s) {
		return 0, false
	}
	return max(s.Delay, 0), true
}

// IsSnooze reports whether a handler's error asks for a snooze.
func IsSnooze(err error) bool {
	_, ok := Snoozed(err)
	return ok
}

// CancelError is a handler's request to end its message cancelled at
// once, for Err (nil: no reason given). It is an errs.ErrCancelled.
type CancelError struct{ Err error }

func (e *CancelError) Error() string {
	if e.Err == nil {
		return "cancelled by its handler"
	}
	return "cancelled by its handler: " + e.Err.Error()
}

func (e *CancelError) Unwrap() []error { return []error{errs.ErrCancelled, e.Err} }
