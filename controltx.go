package baton

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	mq "github.com/batonhq/baton/internal/queue"
)

// The control calls in the caller's own transaction (DESIGN, Interfaces:
// every operation that writes has a variant that runs inside the caller's
// transaction). Each takes a *sql.Tx, or a pgx transaction through
// postgres.PgxTx, on the same database as the client: what it changes
// happens if and only if that transaction commits, and the wake-ups it
// sends (a running message's cancellation, consumers of a queue made
// ready) go out with that commit, as notifications in tx (on MySQL and
// MariaDB read within the listeners' poll interval, as NotifyTx says). A
// call that fails leaves tx to its caller: on PostgreSQL a failed
// statement aborts the transaction, which must then be rolled back.

// CancelMessageTx is CancelMessage in the caller's transaction tx: a
// waiting message is cancelled, a running one has its handler stopped
// with ErrCancelled, once tx commits (and never if it rolls back).
func (c *Client) CancelMessageTx(ctx context.Context, tx Execer, id int64) error {
	cq, err := callerQueue(c.mq, tx, "CancelMessageTx", "")
	if err != nil {
		return err
	}
	running, err := cq.Cancel(ctx, id)
	if err != nil {
		return err
	}
	if running {
		return cq.Notify(ctx, bus.Cancel, strconv.FormatInt(id, 10))
	}
	if !c.jobs.presence.Cached() {
		return nil
	}
	// A waiting message was cancelled: its event, read in tx (the write
	// lock tx may hold forbids baton's own connection on SQLite).
	m, found, err := cq.Get(ctx, id)
	if err != nil || !found {
		return err
	}
	return c.jobEventIn(ctx, tx, &Message{ID: m.ID, Queue: m.Queue, Kind: m.Kind, Attempt: m.Attempt}, JobCancelled, "")
}

// RetryNowTx is RetryNow in the caller's transaction tx: the message (a
// waiting one, or a finished one still in the history) is due once tx
// commits, and the queue's consumers wake then.
func (c *Client) RetryNowTx(ctx context.Context, tx Execer, queue string, id int64) error {
	cq, err := callerQueue(c.mq, tx, "RetryNowTx", queue)
	if err != nil {
		return err
	}
	return cq.RetryNow(ctx, queue, id)
}

// DeleteMessageTx is DeleteMessage in the caller's transaction tx: the
// message (waiting, or finished and in the history) is gone once tx
// commits.
func (c *Client) DeleteMessageTx(ctx context.Context, tx Execer, queue string, id int64) error {
	cq, err := callerQueue(c.mq, tx, "DeleteMessageTx", queue)
	if err != nil {
		return err
	}
	return cq.Delete(ctx, queue, id)
}

// SetQueuePausedTx is SetQueuePaused in the caller's transaction tx: every
// process's workers stop starting the queue's messages once tx commits,
// or, resumed, its consumers wake then.
func (c *Client) SetQueuePausedTx(ctx context.Context, tx Execer, queue string, paused bool) error {
	cq, err := callerQueue(c.mq, tx, "SetQueuePausedTx", queue)
	if err != nil {
		return err
	}
	return cq.SetPaused(ctx, queue, paused)
}

// PurgeDeadTx is PurgeDead in the caller's transaction tx.
func (c *Client) PurgeDeadTx(ctx context.Context, tx Execer, queue string) (int, error) {
	cq, err := callerQueue(c.mq, tx, "PurgeDeadTx", queue)
	if err != nil {
		return 0, err
	}
	return cq.PurgeDead(ctx, queue)
}

// RedriveTx is Redrive in the caller's transaction tx: every dead letter
// of queue goes back to it under its own id, ready now, once tx commits, and its consumers
// wake then. A message that dies while tx runs stays a dead letter.
func (c *Client) RedriveTx(ctx context.Context, tx Execer, queue string) (int, error) {
	cq, err := callerQueue(c.mq, tx, "RedriveTx", queue)
	if err != nil {
		return 0, err
	}
	return cq.Redrive(ctx, queue)
}

// callerQueue checks queue (unless "") and the caller's transaction tx,
// and returns the queue's control calls in tx; what names the call.
func callerQueue(e *mq.Engine, tx Execer, what, queue string) (mq.Caller, error) {
	if queue != "" {
		if err := ValidateQueue(queue); err != nil {
			return mq.Caller{}, err
		}
	}
	ct, err := inCallerTx(tx, what)
	if err != nil {
		return mq.Caller{}, err
	}
	return e.Caller(ct), nil
}

// The claimed message's operations in the caller's transaction, beside
// CompleteTx: a handler that records its outcome in the transaction that
// does its work. Each acts on the claim m was delivered with, once tx
// commits (a claim no longer current is ErrNotClaimed: roll tx back); the
// worker's own settlement of m afterwards finds nothing to do.

// claimTx checks the claimed message m and returns the queue's calls in tx
// for an operation on it.
func claimTx(e *mq.Engine, tx Execer, m *Message, what string) (mq.Caller, error) {
	if err := claimedCheck(m, what); err != nil {
		return mq.Caller{}, err
	}
	return callerQueue(e, tx, what, "")
}

// RetryTx is Session.Retry in the caller's transaction tx: the message
// waits out the retry policy's wait for its attempt (see
// Session.Retry), or becomes a dead letter
// at its attempt limit. With a delay, it waits that long instead
// (Session.RetryAfter). A message cancelled while it ran ends cancelled
// instead.
func (c *Client) RetryTx(ctx context.Context, tx Execer, m *Message, cause error, delay ...time.Duration) error {
	cq, err := claimTx(c.mq, tx, m, "RetryTx")
	if err != nil {
		return err
	}
	d := c.retryDelay(m)
	if len(delay) > 0 {
		d = delay[0]
	}
	e, dead := mq.RetryError(m.Attempt, m.MaxAttempts, cause)
	ended, err := cq.Retry(ctx, claimOf(m), m.Queue, d, m.mode == Parallel, e, dead)
	if err != nil {
		return err
	}
	st := JobFailed
	if ended != "" {
		st = finishedEvent(ended)
	}
	return c.jobEventIn(ctx, tx, m, st, e.Error)
}

// FailTx is Session.Fail in the caller's transaction tx: the message
// becomes a dead letter once tx commits.
func (c *Client) FailTx(ctx context.Context, tx Execer, m *Message, reason string) error {
	cq, err := claimTx(c.mq, tx, m, "FailTx")
	if err != nil {
		return err
	}
	e := attemptError(m, errors.New(reason))
	if err := cq.Finish(ctx, claimOf(m), m.Queue, driver.MessageDead, &e); err != nil {
		return err
	}
	return c.jobEventIn(ctx, tx, m, JobDead, e.Error)
}

// ExtendTx is Session.Extend in the caller's transaction tx: the claim's
// lease runs for d from the statement's time once tx commits. m's
// ClaimedUntil is left as it is (tx may roll back); the worker's own
// renewals go on.
func (c *Client) ExtendTx(ctx context.Context, tx Execer, m *Message, d time.Duration) error {
	cq, err := claimTx(c.mq, tx, m, "ExtendTx")
	if err != nil {
		return err
	}
	return cq.Extend(ctx, claimOf(m), m.Queue, d)
}
