package baton

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/mq"
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

// callerQueue returns the queue control statements in the caller's
// transaction tx (inCallerTx).
func (c *Client) callerQueue(tx Execer, what string) (driver.CallerQueueTx, error) {
	ct, err := inCallerTx(tx, what)
	if err != nil {
		return nil, err
	}
	return c.drv.Queue().CallerQueueTx(ct), nil
}

// notifyIn sends an internal notification in tx: it goes out with tx's
// commit.
func (c *Client) notifyIn(ctx context.Context, tx Execer, channel, payload string) error {
	q, args := c.drv.Notifier().NotifyStatement(channel, payload)
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("baton: notify: %w", err)
	}
	return nil
}

// CancelMessageTx is CancelMessage in the caller's transaction tx: a
// waiting message is cancelled, a running one has its handler stopped
// with ErrCancelled, once tx commits (and never if it rolls back).
func (c *Client) CancelMessageTx(ctx context.Context, tx Execer, id int64) error {
	cq, err := c.callerQueue(tx, "CancelMessageTx")
	if err != nil {
		return err
	}
	state, err := cq.MessageCancel(ctx, id)
	running, err := cancelled(id, state, err)
	if err != nil || !running {
		return err
	}
	return c.notifyIn(ctx, tx, cancelChannel, strconv.FormatInt(id, 10))
}

// cancelled reads the outcome of a cancellation: whether the message was
// running (its handler must be told), or the error to report.
func cancelled(id int64, state driver.MessageState, err error) (running bool, _ error) {
	if err != nil {
		return false, fmt.Errorf("baton: cancel message %d: %w", id, err)
	}
	switch state {
	case "":
		return false, fmt.Errorf("%w: %d", ErrNotFound, id)
	case driver.MessageReady:
		return false, nil
	case driver.MessageClaimed:
		return true, nil
	}
	return false, fmt.Errorf("%w: message %d is %s", ErrFinished, id, stateOf(driver.Message{State: state}, time.Now()))
}

// RetryNowTx is RetryNow in the caller's transaction tx: the waiting
// message is due once tx commits, and the queue's consumers wake then.
func (c *Client) RetryNowTx(ctx context.Context, tx Execer, queue string, id int64) error {
	if err := c.onWaitingTx(ctx, tx, "RetryNowTx", queue, id, driver.CallerQueueTx.MessageRetryNow); err != nil {
		return err
	}
	return c.notifyIn(ctx, tx, mq.Channel(queue), "")
}

// DeleteMessageTx is DeleteMessage in the caller's transaction tx.
func (c *Client) DeleteMessageTx(ctx context.Context, tx Execer, queue string, id int64) error {
	return c.onWaitingTx(ctx, tx, "DeleteMessageTx", queue, id, driver.CallerQueueTx.MessageDeleteWaiting)
}

func (c *Client) onWaitingTx(ctx context.Context, tx Execer, what, queue string, id int64, op func(driver.CallerQueueTx, context.Context, string, int64) (bool, driver.MessageState, error)) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	cq, err := c.callerQueue(tx, what)
	if err != nil {
		return err
	}
	done, state, err := op(cq, ctx, queue, id)
	return onWaitingResult(queue, id, done, state, err)
}

// onWaitingResult is the error of a call on one waiting message, given
// whether it acted and, when not, the message's state.
func onWaitingResult(queue string, id int64, done bool, state driver.MessageState, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("baton: message %d of %s: %w", id, queue, err)
	case done:
		return nil
	case state == driver.MessageClaimed:
		return fmt.Errorf("%w: message %d of %s", ErrRunning, id, queue)
	}
	return fmt.Errorf("%w: %d in %s", ErrNoMessage, id, queue)
}

// PauseQueueTx is PauseQueue in the caller's transaction tx: every
// process's workers stop starting the queue's messages once tx commits.
func (c *Client) PauseQueueTx(ctx context.Context, tx Execer, queue string) error {
	if err := c.pauseTx(ctx, tx, "PauseQueueTx", queue, true); err != nil {
		return err
	}
	return c.notifyIn(ctx, tx, pauseChannel, queue)
}

// ResumeQueueTx is ResumeQueue in the caller's transaction tx: the
// queue's consumers wake once tx commits.
func (c *Client) ResumeQueueTx(ctx context.Context, tx Execer, queue string) error {
	if err := c.pauseTx(ctx, tx, "ResumeQueueTx", queue, false); err != nil {
		return err
	}
	if err := c.notifyIn(ctx, tx, pauseChannel, queue); err != nil {
		return err
	}
	return c.notifyIn(ctx, tx, mq.Channel(queue), "")
}

func (c *Client) pauseTx(ctx context.Context, tx Execer, what, queue string, paused bool) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	cq, err := c.callerQueue(tx, what)
	if err != nil {
		return err
	}
	found, err := cq.QueuePause(ctx, queue, paused)
	return pauseResult(queue, found, err)
}

// pauseResult is the error of pausing or resuming queue.
func pauseResult(queue string, found bool, err error) error {
	if err != nil {
		return fmt.Errorf("baton: pause queue: %w", err)
	}
	if !found {
		return fmt.Errorf("%w: %q", ErrUnknownQueue, queue)
	}
	return nil
}

// PurgeDeadTx is PurgeDead in the caller's transaction tx.
func (c *Client) PurgeDeadTx(ctx context.Context, tx Execer, queue string) (int, error) {
	return c.deadLettersTx(ctx, tx, "PurgeDeadTx", "purge dead letters", queue, driver.CallerQueueTx.DeadPurge)
}

// RedriveTx is Redrive in the caller's transaction tx: every dead letter
// of queue goes back to it, ready now, once tx commits, and its consumers
// wake then. A message that dies while tx runs stays a dead letter.
func (c *Client) RedriveTx(ctx context.Context, tx Execer, queue string) (int, error) {
	n, err := c.deadLettersTx(ctx, tx, "RedriveTx", "redrive", queue, driver.CallerQueueTx.DeadRedriveAll)
	if err == nil && n > 0 {
		err = c.notifyIn(ctx, tx, mq.Channel(queue), "")
	}
	return n, err
}

// deadLettersTx runs op on the dead letters of queue, which must exist, in
// the caller's transaction tx; what names the call, verb its errors.
func (c *Client) deadLettersTx(ctx context.Context, tx Execer, what, verb, queue string,
	op func(driver.CallerQueueTx, context.Context, string) (int, error)) (int, error) {
	if err := ValidateQueue(queue); err != nil {
		return 0, err
	}
	cq, err := c.callerQueue(tx, what)
	if err != nil {
		return 0, err
	}
	ok, err := cq.QueueExists(ctx, queue)
	switch {
	case err != nil:
		return 0, fmt.Errorf("baton: %s: %w", verb, err)
	case !ok:
		return 0, fmt.Errorf("%w: %q", ErrUnknownQueue, queue)
	}
	n, err := op(cq, ctx, queue)
	if err != nil {
		return 0, fmt.Errorf("baton: %s: %w", verb, err)
	}
	return n, nil
}

// The claimed message's operations in the caller's transaction, beside
// CompleteTx: a handler that records its outcome in the transaction that
// does its work. Each acts on the claim m was delivered with, once tx
// commits (a claim no longer current is ErrNotClaimed: roll tx back); the
// worker's own settlement of m afterwards finds nothing to do.

// claimTx returns the queue statements in tx for an operation on the
// claimed message m.
func (c *Client) claimTx(tx Execer, m *Message, what string) (driver.CallerQueueTx, error) {
	if err := claimedCheck(m, what); err != nil {
		return nil, err
	}
	return c.callerQueue(tx, what)
}

// RetryTx is Session.Retry in the caller's transaction tx: the message
// waits out the client's backoff for its attempt, or becomes a dead letter
// at its attempt limit.
func (c *Client) RetryTx(ctx context.Context, tx Execer, m *Message, cause error) error {
	if err := claimedCheck(m, "RetryTx"); err != nil {
		return err
	}
	return c.RetryAfterTx(ctx, tx, m, c.opts.Retry.delay(m.Attempt), cause)
}

// RetryAfterTx is Session.RetryAfter in the caller's transaction tx. A
// message cancelled while it ran ends cancelled instead.
func (c *Client) RetryAfterTx(ctx context.Context, tx Execer, m *Message, delay time.Duration, cause error) error {
	cq, err := c.claimTx(tx, m, "RetryAfterTx")
	if err != nil {
		return err
	}
	e, dead := retryError(m, cause)
	if dead {
		return c.finishTx(ctx, tx, cq, m, driver.MessageDead, &e)
	}
	ok, err := cq.MessageRetry(ctx, claimOf(m), max(delay, 0), m.mode == Parallel, e)
	switch {
	case err != nil:
		return fmt.Errorf("baton: retry: %w", err)
	case !ok:
		// Not ours any more, or cancelled: only then can it be finished.
		return c.finishTx(ctx, tx, cq, m, driver.MessageCancelled, &e)
	case delay <= 0:
		return c.notifyIn(ctx, tx, mq.Channel(m.Queue), "")
	}
	return nil
}

// FailTx is Session.Fail in the caller's transaction tx: the message
// becomes a dead letter once tx commits.
func (c *Client) FailTx(ctx context.Context, tx Execer, m *Message, reason string) error {
	cq, err := c.claimTx(tx, m, "FailTx")
	if err != nil {
		return err
	}
	e := attemptError(m, errors.New(reason))
	return c.finishTx(ctx, tx, cq, m, driver.MessageDead, &e)
}

// finishTx moves the claimed message m to the history in state, in tx;
// the queue's consumers wake with the commit (the next message of an
// ordered queue or of m's key may go then).
func (c *Client) finishTx(ctx context.Context, tx Execer, cq driver.CallerQueueTx, m *Message, state driver.MessageState, e *driver.AttemptError) error {
	ok, err := cq.MessageFinish(ctx, claimOf(m), state, e)
	switch {
	case err != nil:
		return fmt.Errorf("baton: finish message: %w", err)
	case !ok:
		return notClaimed(m)
	}
	return c.notifyIn(ctx, tx, mq.Channel(m.Queue), "")
}

// ExtendTx is Session.Extend in the caller's transaction tx: the claim's
// lease runs for d from the statement's time once tx commits. m's
// ClaimedUntil is left as it is (tx may roll back); the worker's own
// renewals go on.
func (c *Client) ExtendTx(ctx context.Context, tx Execer, m *Message, d time.Duration) error {
	cq, err := c.claimTx(tx, m, "ExtendTx")
	if err != nil {
		return err
	}
	ok, err := cq.MessageExtend(ctx, claimOf(m), d)
	switch {
	case err != nil:
		return fmt.Errorf("baton: extend: %w", err)
	case !ok:
		return notClaimed(m)
	}
	return nil
}
