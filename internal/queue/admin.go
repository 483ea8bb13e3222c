package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/events"
	"github.com/batonhq/baton/internal/txn"
)

// mustExist is ErrUnknownQueue when nothing was ever enqueued to queue.
func mustExist(ctx context.Context, tx driver.QueueTx, queue string) error {
	ok, err := tx.QueueExists(ctx, queue)
	if err == nil && !ok {
		err = fmt.Errorf("%w: %q", errs.ErrUnknownQueue, queue)
	}
	return err
}

// inQueueTx runs fn in a transaction on queue, which must exist.
func inQueueTx[T any](ctx context.Context, e *Engine, queue string, fn func(tx driver.Tx) (T, error)) (T, error) {
	var out T
	err := txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		if err := mustExist(ctx, tx, queue); err != nil {
			return err
		}
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

// DeadLetters lists a queue's dead letters, oldest first, at most limit
// (default 100), events in canonical form.
func (e *Engine) DeadLetters(ctx context.Context, queue string, limit int) ([]driver.DeadLetter, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := inQueueTx(ctx, e, queue, func(tx driver.Tx) ([]driver.DeadLetter, error) { return tx.DeadList(ctx, queue, limit) })
	for i, d := range rows {
		rows[i].Payload, rows[i].Key, _ = events.Canonical(d.Queue, d.Payload, d.Key)
	}
	return rows, err
}

// Redrive moves every dead letter of a queue back to it under its own id,
// with its attempts reset, batch by batch, and returns how many.
func (e *Engine) Redrive(ctx context.Context, queue string) (int, error) {
	total := 0
	for {
		n, err := inQueueTx(ctx, e, queue, func(tx driver.Tx) (int, error) { return tx.DeadRedrive(ctx, queue) })
		if err != nil {
			return total, err
		}
		total += n
		if n == 0 {
			break
		}
	}
	if total > 0 {
		e.Wake(queue)
	}
	return total, nil
}

// PurgeDead deletes every dead letter of a queue and returns how many.
func (e *Engine) PurgeDead(ctx context.Context, queue string) (int, error) {
	return inQueueTx(ctx, e, queue, func(tx driver.Tx) (int, error) { return tx.DeadPurge(ctx, queue) })
}

// Stats are the counts of one queue, and its limits (baton.QueueStats).
type Stats struct {
	Queue       string
	Ready       int64
	Scheduled   int64
	Retrying    int64
	Claimed     int64
	Dead        int64
	Completed   int64
	Cancelled   int64
	OldestReady time.Duration
	Estimated   bool
	Paused      bool
	Throughput  float64
	Pending     int64
	Limits      Limits
}

// Stats returns the counts of a queue, with its throughput: messages
// finished per second over the counters' window.
func (e *Engine) Stats(ctx context.Context, queue string) (Stats, error) {
	var pending int64
	st, err := inQueueTx(ctx, e, queue, func(tx driver.Tx) (driver.QueueStats, error) {
		st, err := tx.QueueStats(ctx, queue)
		if err == nil {
			pending, err = tx.DepsWaiting(ctx, queue, statsLimit)
		}
		return st, err
	})
	if err != nil {
		return Stats{}, err
	}
	limits, err := ParseLimits(st.Limits)
	if err != nil {
		return Stats{}, err
	}
	out := Stats{Queue: queue, Ready: st.Ready, Scheduled: st.Scheduled, Retrying: st.Retrying, Claimed: st.Claimed,
		Dead: st.Dead, Completed: st.Completed, Cancelled: st.Cancelled,
		OldestReady: st.OldestReady, Estimated: st.Estimated, Paused: st.Paused, Pending: pending, Limits: limits}
	if st.Window > 0 {
		out.Throughput = float64(st.RecentAcked+st.RecentDead) / st.Window.Seconds()
	}
	return out, nil
}

// Queues lists every queue.
func (e *Engine) Queues(ctx context.Context) ([]string, error) {
	var out []string
	err := txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		var err error
		out, err = tx.QueueList(ctx)
		return err
	})
	return out, err
}

// SetPaused pauses or resumes a queue in the database; the caller tells
// this process's workers and announces it (bus.Pause). A resumed
// queue's consumers here wake at once.
func (e *Engine) SetPaused(ctx context.Context, queue string, paused bool) error {
	var found bool
	err := txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		var err error
		found, err = tx.QueuePause(ctx, queue, paused)
		return err
	})
	return PauseResult(queue, found, err)
}

// RetryNow makes a waiting message due at once.
func (e *Engine) RetryNow(ctx context.Context, queue string, id int64) error {
	if err := e.onWaiting(ctx, queue, id, driver.QueueTx.MessageRetryNow); err != nil {
		return err
	}
	e.Wake(queue)
	return nil
}

// Delete deletes a message that is not running: a waiting one, or one
// in the history.
func (e *Engine) Delete(ctx context.Context, queue string, id int64) error {
	return e.onWaiting(ctx, queue, id, driver.QueueTx.MessageDelete)
}

func (e *Engine) onWaiting(ctx context.Context, queue string, id int64, op func(driver.QueueTx, context.Context, string, int64) (bool, driver.MessageState, error)) error {
	var done bool
	var state driver.MessageState
	err := txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		var err error
		done, state, err = op(tx, ctx, queue, id)
		return err
	})
	e.DepsKick(id) // a deleted parent's dependants
	return OnWaitingResult(queue, id, done, state, err)
}

// Get reads a message by id, whatever its state (a finished one while its
// history is kept); ErrNotFound when there is none.
func (e *Engine) Get(ctx context.Context, id int64) (driver.Message, error) {
	var m driver.Message
	var found bool
	// Outside any transaction, like the listings: MessageGet reads the
	// queue first, so that a message moving to the history meanwhile is
	// found in one of the two. One moving back (RetryNow, Redrive) between
	// the two reads is found by a second try.
	err := txn.Retrying(ctx, e.drv, func() (err error) {
		m, found, err = e.drv.NoTx().MessageGet(ctx, id)
		if err == nil && !found {
			m, found, err = e.drv.NoTx().MessageGet(ctx, id)
		}
		return err
	})
	if err != nil {
		return m, fmt.Errorf("baton: message %d: %w", id, err)
	}
	if !found {
		return m, fmt.Errorf("%w: %d", errs.ErrNotFound, id)
	}
	return m, nil
}

// Cancel cancels a message and says whether it was running (its handler,
// wherever it runs, must be told).
func (e *Engine) Cancel(ctx context.Context, id int64) (running bool, err error) {
	var state driver.MessageState
	err = txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		var err error
		state, err = tx.MessageCancel(ctx, id)
		return err
	})
	e.DepsKick(id) // a cancelled parent's dependants
	return Cancelled(id, state, err)
}

// The names of a message's states (baton.MessageStates).
const (
	StateScheduled = "scheduled"
	// StatePending: waiting for its parents (dependencies).
	StatePending   = "pending"
	StateReady     = "ready"
	StateRunning   = "running"
	StateRetrying  = "retrying"
	StateCompleted = "completed"
	StateCancelled = "cancelled"
	StateDead      = "dead"
)

// StateName names a stored message's state at now.
func StateName(m driver.Message, now time.Time) string {
	switch m.State {
	case driver.MessageClaimed:
		return StateRunning
	case driver.MessageCompleted:
		return StateCompleted
	case driver.MessageCancelled:
		return StateCancelled
	case driver.MessageDead:
		return StateDead
	case driver.MessageWaiting:
		return StatePending
	}
	switch {
	case !m.RunAt.After(now):
		return StateReady
	case m.Attempt > 0:
		return StateRetrying
	}
	return StateScheduled
}

// CancelRequested says whether a running message's cancellation was
// requested (a worker's check of a cancellation it may have missed).
func (e *Engine) CancelRequested(ctx context.Context, id int64) (bool, error) {
	m, found, err := e.drv.NoTx().MessageGet(ctx, id)
	return err == nil && found && m.CancelRequested, err
}

// Paused says whether the queue is paused.
func (e *Engine) Paused(ctx context.Context, queue string) (bool, error) {
	return e.drv.NoTx().QueuePaused(ctx, queue)
}
