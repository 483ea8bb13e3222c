package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/txn"
)

// The settlement of one session's claims: each call acts on claim cl, of
// a message of queue, and tells the session's Holds that it is settled.

// Ack completes the claim, with its handler's output (JSON, nil for none),
// and counts it; done is false when the claim was not the session's any
// more, or its message was cancelled while it ran.
func (e *Engine) Ack(ctx context.Context, h *Holds, cl driver.Claim, queue string, output []byte) (done bool, err error) {
	var n int
	if output != nil {
		n, err = e.CompleteOutput(ctx, cl, output)
	} else {
		n, err = e.Complete(ctx, cl.SessionID, []driver.Claim{cl})
	}
	if err != nil {
		return false, fmt.Errorf("baton: ack: %w", err)
	}
	h.Settled(cl)
	if n == 0 {
		return false, nil
	}
	e.CountFinished(queue, 1, 0)
	e.Settled(queue)
	return true, nil
}

// Retry gives the claim's message back for another attempt after delay
// (to the back of its queue when toBack), recording e; ok is false when
// the claim was not the session's any more, or its message was cancelled
// while it ran (only then can it be finished).
func (e *Engine) Retry(ctx context.Context, h *Holds, cl driver.Claim, queue string, delay time.Duration, toBack bool, ae driver.AttemptError) (ok bool, err error) {
	ok, err = e.drv.Relaxed().MessageRetry(ctx, cl, max(delay, 0), toBack, ae)
	if err != nil {
		return false, fmt.Errorf("baton: retry: %w", err)
	}
	h.Settled(cl)
	if ok {
		e.countRetried(queue)
	}
	if ok && delay <= 0 {
		e.Wake(queue)
	} else {
		e.Settled(queue)
	}
	return ok, nil
}

// Snooze gives the claim's message back to run after delay (to the back
// of its queue when toBack), taking back the attempt its claim counted and
// recording the snooze in the attempt's record; ok is false when the claim was not the session's any more,
// or its message was cancelled while it ran (only then can it be finished).
func (e *Engine) Snooze(ctx context.Context, h *Holds, cl driver.Claim, queue string, attempt int, delay time.Duration, toBack bool) (ok bool, err error) {
	if delay < 0 {
		return false, fmt.Errorf("%w: snooze: negative delay %v", errs.ErrInvalid, delay)
	}
	ae := driver.AttemptError{At: time.Now().UTC(), Attempt: attempt, Error: "snoozed for " + delay.String(), Snoozed: true}
	ok, err = e.drv.Relaxed().MessageSnooze(ctx, cl, delay, toBack, ae)
	if err != nil {
		return false, fmt.Errorf("baton: snooze: %w", err)
	}
	h.Settled(cl)
	if ok {
		// Due at once, or the claims waiting in the queue must learn of a
		// nearer due time.
		e.Wake(queue)
	}
	return ok, nil
}

// Release gives a claim that never started back to its queue at once,
// keeping its place; the attempt its claim counted is taken back.
func (e *Engine) Release(ctx context.Context, h *Holds, cl driver.Claim, queue string) error {
	ok, err := e.drv.Relaxed().MessageRelease(ctx, cl)
	if err == nil {
		h.Settled(cl)
	}
	if err == nil && !ok {
		err = NotClaimed(cl.ID, queue)
	}
	e.Wake(queue)
	return err
}

// Start starts a held claim (driver.ClaimHeld) with a fresh lease of d;
// ErrNotClaimed when it is no longer the session's or was cancelled.
func (e *Engine) Start(ctx context.Context, cl driver.Claim, queue string, mode int, d time.Duration) error {
	ok, err := e.drv.Relaxed().MessageStart(ctx, cl, mode, d)
	if err != nil {
		return fmt.Errorf("baton: start: %w", err)
	}
	if !ok {
		return NotClaimed(cl.ID, queue)
	}
	return nil
}

// Finish moves the claim's message to the history in state, recording ae;
// the queue's consumers wake (the next message of an ordered queue or of
// its key may go now).
func (e *Engine) Finish(ctx context.Context, h *Holds, cl driver.Claim, queue string, state driver.MessageState, ae *driver.AttemptError) error {
	var ok bool
	err := txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		var err error
		ok, err = tx.MessageFinish(ctx, cl, state, ae)
		return err
	})
	if err != nil {
		return fmt.Errorf("baton: finish message: %w", err)
	}
	h.Settled(cl)
	if !ok {
		return NotClaimed(cl.ID, queue)
	}
	if state == driver.MessageDead {
		e.CountFinished(queue, 0, 1)
	}
	e.Wake(queue)
	e.DepsKick(cl.ID)
	return nil
}

// Extend renews the claim's lease for d from now.
func (e *Engine) Extend(ctx context.Context, cl driver.Claim, queue string, d time.Duration) error {
	ok, err := e.drv.Relaxed().MessageExtend(ctx, cl, d)
	if err != nil {
		return fmt.Errorf("baton: extend: %w", err)
	}
	if !ok {
		return NotClaimed(cl.ID, queue)
	}
	return nil
}
