package baton

import (
	"context"
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
// ready) go out with that commit, as notifications in tx. A call that
// fails leaves tx to its caller: on PostgreSQL a failed statement aborts
// the transaction, which must then be rolled back.

// callerQueue returns the queue control statements in the caller's
// transaction tx (inCallerTx).
func (c *Client) callerQueue(tx Execer, what string) (driver.CallerQueueTx, error) {
	ct, err := inCallerTx(tx, what)
	if err != nil {
		return nil, err
	}
	return c.drv.CallerQueueTx(ct), nil
}

// notifyIn sends an internal notification in tx: it goes out with tx's
// commit.
func (c *Client) notifyIn(ctx context.Context, tx Execer, channel, payload string) error {
	q, args := c.drv.NotifyStatement(channel, payload)
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

// PauseQueueTx is PauseQueue in the caller's transaction tx.
func (c *Client) PauseQueueTx(ctx context.Context, tx Execer, queue string) error {
	return c.pauseTx(ctx, tx, "PauseQueueTx", queue, true)
}

// ResumeQueueTx is ResumeQueue in the caller's transaction tx: the
// queue's consumers wake once tx commits.
func (c *Client) ResumeQueueTx(ctx context.Context, tx Execer, queue string) error {
	if err := c.pauseTx(ctx, tx, "ResumeQueueTx", queue, false); err != nil {
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
	if err := ValidateQueue(queue); err != nil {
		return 0, err
	}
	cq, err := c.callerQueue(tx, "PurgeDeadTx")
	if err != nil {
		return 0, err
	}
	ok, err := cq.QueueExists(ctx, queue)
	switch {
	case err != nil:
		return 0, fmt.Errorf("baton: purge dead letters: %w", err)
	case !ok:
		return 0, fmt.Errorf("%w: %q", ErrUnknownQueue, queue)
	}
	n, err := cq.DeadPurge(ctx, queue)
	if err != nil {
		return 0, fmt.Errorf("baton: purge dead letters: %w", err)
	}
	return n, nil
}
