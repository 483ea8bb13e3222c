package baton

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/worker"
)

// Snooze returns the error a Handler (or a kind's worker, AddWorker)
// returns, possibly wrapped, to put its message off for d without using an
// attempt (River's JobSnooze): the message goes back to its queue, due d
// from now (0: at once), its attempt taken back, so that a snoozed run
// does not count toward MaxAttempts and the next run has the same
// Message.Attempt. The snooze is recorded in the message's Errors (an
// entry with Snoozed set); its LastError stays. OnError is not called.
func Snooze(d time.Duration) error { return &worker.SnoozeError{Delay: d} }

// Cancel returns the error a Handler (or a kind's worker) returns,
// possibly wrapped, to end its message cancelled at once (River's
// JobCancel): neither retried nor dead, with err (nil: no reason)
// recorded as its error. It matches ErrCancelled.
func Cancel(err error) error { return &worker.CancelError{Err: err} }

// Snooze gives a claimed message back to its queue, due d from now,
// without using an attempt: the attempt its claim counted is taken back,
// and the snooze is recorded in its errors (see the function Snooze).
// ErrNotClaimed when the claim is no longer this session's; a message
// cancelled while it was claimed ends cancelled, and Snooze returns an
// error matching ErrCancelled.
func (s *Session) Snooze(ctx context.Context, m *Message, d time.Duration) error {
	if err := claimedCheck(m, "snooze"); err != nil {
		return err
	}
	ok, err := s.c.mq.Snooze(ctx, &s.holds, s.claim(m), m.Queue, m.Attempt, d, m.mode == Parallel)
	if ok {
		s.c.jobEvent(m, JobSnoozed, "")
	}
	if err != nil || ok {
		return err
	}
	// Not ours any more, or cancelled: only then can it be finished.
	if s.cancelled(ctx, m, fmt.Errorf("%w while it was claimed (it was being snoozed)", ErrCancelled)) == nil {
		return fmt.Errorf("%w: message %d of queue %q was cancelled while it was claimed; it ends cancelled", ErrCancelled, m.ID, m.Queue)
	}
	return notClaimed(m)
}
