package baton

import (
	"context"
	"time"

	"github.com/batonhq/baton/internal/locks"
	mq "github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sessions"
	"github.com/batonhq/baton/internal/tracing"
)

// BeforeLockRegister makes every waiting Lock call run f with its
// session's id between its request's commit and its waiter's registration
// (nil: nothing).
func BeforeLockRegister(f func(sessionID string)) {
	if f == nil {
		locks.BeforeRegister.Store(nil)
		return
	}
	locks.BeforeRegister.Store(&f)
}

// SetHostIdentity makes clients opened afterwards in this process claim
// another host, so that tests can exercise the lease path of crash recovery.
func SetHostIdentity(id string) { sessions.HostIdentity = func() string { return id } }

// SwitchRenewals stops (off) or restarts a client's lease renewals, as if
// the process could not reach the database.
func SwitchRenewals(c *Client, off bool) { c.leases.SwitchRenewals(off) }

// SetTurnstileOn sets how long in all a client's lock call may wait behind
// a turnstile before it joins the table (0: the default second).
func SetTurnstileOn(c *Client, d time.Duration) { c.locks.SetTurnstileOn(d) }

// BeforeScheduleAdvance makes every tick of the named schedule run f
// between reading the schedule's last tick and advancing it, in the
// tick's transaction (nil: nothing).
func BeforeScheduleAdvance(name string, f func()) {
	if f == nil {
		mq.BeforeAdvance.Delete(name)
		return
	}
	mq.BeforeAdvance.Store(name, f)
}

// RunScheduleAt runs one tick of the client's schedule as if the time were
// now: it enqueues the latest tick due then, unless a process did.
func RunScheduleAt(ctx context.Context, c *Client, name string, now time.Time) error {
	return c.mq.Scheduler().RunAt(ctx, name, now)
}

// SessionsLost is how many sessions the client has reported lost.
func SessionsLost(c *Client) int64 { return c.leases.LostCount() }

// ReapOnce runs one pass of the reaper (what every heartbeat and every
// empty claim runs): it ends the dead sessions it finds and reports how many.
func ReapOnce(ctx context.Context, c *Client) (int, error) {
	refs, err := c.leases.ListReapable(ctx)
	if err != nil {
		return 0, err
	}
	return c.leases.Reap(ctx, refs), nil
}

// QueueWaiters is how many of the client's Claim calls wait on the queue.
func QueueWaiters(c *Client, queue string) int {
	return c.queueWaits.Count(queue)
}

// TraceParentValid reports whether a message's traceparent would be
// followed (the W3C form baton writes and reads).
func TraceParentValid(tp string) bool {
	return tracing.Decode(tracing.Context{TraceParent: tp}).IsValid()
}

// PruneHistory runs one pass of the history pruner.
func PruneHistory(ctx context.Context, c *Client) error { return c.mq.PruneHistory(ctx) }

// ScheduleNext is the tick of a schedule after t.
func ScheduleNext(s Schedule, t time.Time) (time.Time, error) {
	next, err := s.clock()
	if err != nil {
		return time.Time{}, err
	}
	return next(t), nil
}

// LoseWakeUps makes a client drop (on) or take again every wake-up its
// listener brings: lock grants and looks, queue wake-ups, and
// cancellations of running messages.
func LoseWakeUps(c *Client, on bool) { c.bus.SetDeaf(on) }

// ClaimTries is how many claims the client's Claim calls have run, and
// QueuePolls how many polls of its waiting consumers it has run.
func ClaimTries(c *Client) int64 { return c.claimTries.Load() }

// QueuePolls: see ClaimTries.
func QueuePolls(c *Client) int64 { return c.mq.Polls() }

// QueuePausedHere reports whether the client knows the queue paused (its
// workers then start none of the messages they claimed ahead).
func QueuePausedHere(c *Client, queue string) bool {
	return c.workers.Paused(queue)
}

// LockChecks, LockGateLooks, LockNetLooks and LockDetections count the
// client's reads of its waiting lock requests' statuses, its looks at
// their names' gates in statements of their own, its poll's looks at the
// wait graph, and its runs of the deadlock detector.
func LockChecks(c *Client) int64     { return c.locks.Checks() }
func LockGateLooks(c *Client) int64  { return c.locks.GateLooks() }
func LockNetLooks(c *Client) int64   { return c.locks.NetLooks() }
func LockDetections(c *Client) int64 { return c.locks.Detections() }

// LockContentionSteps is how many fast attempts, contention reads and
// turnstile calls the client's single-name lock calls ran.
func LockContentionSteps(c *Client) int64 { return c.locks.ContentionSteps() }

// SkipOwnDeadlockSearch makes the client's waiting lock requests skip
// their own search for a cycle, leaving the poll's safety net.
func SkipOwnDeadlockSearch(c *Client, off bool) { c.locks.SkipOwnSearch(off) }

// ScheduleCount is how many schedules the client has registered.
func ScheduleCount(c *Client) int { return c.mq.Scheduler().Len() }

// DropClaimReplies makes the client's next n claims that claim something
// fail once they committed, as if their replies were lost.
func DropClaimReplies(c *Client, n int) { c.mq.DropClaimReplies(int32(n)) }
