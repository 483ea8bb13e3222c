// Package errs holds the errors the engine's packages return and the root
// package exports (baton.ErrTimeout is errs.ErrTimeout, and so on), so that
// callers test them with errors.Is whichever package made them.
package errs

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// The errors; baton's errors.go documents each.
var (
	ErrWrongName   = errors.New("baton: wrong lock name")
	ErrTimeout     = errors.New("baton: lock wait timeout")
	ErrDeadlock    = errors.New("baton: deadlock found when trying to get lock")
	ErrSessionLost = errors.New("baton: session lost")
	ErrClosed      = errors.New("baton: closed")
	ErrInvalid     = errors.New("baton: invalid argument")
)

// Streak says a repeated failure once: First reports whether err is the
// first failure since the work last succeeded (a nil err ends the
// streak), so that work retried on every interval logs an outage once.
// Safe for concurrent use.
type Streak struct{ on atomic.Bool }

// First records err's outcome and reports whether it starts a streak.
func (s *Streak) First(err error) bool {
	if err == nil {
		s.on.Store(false)
		return false
	}
	return s.on.CompareAndSwap(false, true)
}

// QuoteMax is how many characters of a name Quote shows.
const QuoteMax = 80

// Quote quotes a name for an error message as %q does, cut after
// QuoteMax characters (a 10,000-character name is not echoed whole), with
// how much was left out.
func Quote(s string) string {
	n := 0
	for i := range s {
		if n == QuoteMax {
			return fmt.Sprintf("%q… (%d bytes in all)", s[:i], len(s))
		}
		n++
	}
	return fmt.Sprintf("%q", s)
}

// The subscriptions' errors; baton's errors.go documents each.
var (
	ErrUnknownSubscription = errors.New("baton: unknown subscription")
	ErrSubscriptionExists  = errors.New("baton: subscription exists")
)
