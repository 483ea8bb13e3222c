package baton

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
	mq "github.com/batonhq/baton/internal/queue"
)

// BulkAction is what Client.Bulk does to each message it selects.
type BulkAction string

// The bulk actions, each as the call on one message does it.
const (
	// BulkCancel cancels waiting messages (scheduled, ready, retrying)
	// and asks running ones to stop, as CancelMessage does.
	BulkCancel BulkAction = "cancel"
	// BulkDelete deletes messages that are not running: waiting ones and
	// finished ones (completed, cancelled, dead), as DeleteMessage does.
	BulkDelete BulkAction = "delete"
	// BulkRetry makes scheduled and retrying messages due now and moves
	// finished ones (completed, cancelled, dead) back to their queue,
	// ready now under their own ids, as RetryNow does.
	BulkRetry BulkAction = "retry"
)

// MessageFilter selects the messages of a bulk action (Client.Bulk). Every
// field that is set narrows the selection. A filter that sets none of
// Queue, States, Kind and OlderThan selects every message of every queue:
// it must say so with All, so that a forgotten field never empties a
// database.
type MessageFilter struct {
	// Queue: only this queue's messages ("" for every queue).
	Queue string
	// States: only messages in these states; empty: every state the
	// action applies to (BulkCancel: scheduled, ready, running, retrying;
	// BulkDelete: every state but running; BulkRetry: scheduled,
	// retrying, completed, cancelled, dead). A state the action does not
	// apply to is ErrInvalid.
	States []MessageState
	// Kind: only messages of this kind ("" for any).
	Kind string
	// OlderThan: only messages created longer ago than this (finished
	// ones: that finished longer ago), by this process's clock against
	// the database's timestamps; 0 for any age.
	OlderThan time.Duration
	// Limit: act on at most this many messages (0: no limit).
	Limit int
	// All confirms a filter that selects every message of every queue.
	All bool
}

// Bulk applies an action to every message the filter selects and returns
// how many it acted on. It goes through them along the listing's indexes
// (ListMessages' order), at most 500 messages per transaction, so that a
// big queue is never locked for long and workers carry on meanwhile; it
// is not atomic as a whole (a failure leaves the batches before it done).
// A message that changes meanwhile is judged as the call on one message
// would judge it: one that started running is skipped by BulkDelete and
// BulkRetry and asked to stop by BulkCancel; one that finished is skipped
// by BulkCancel and by BulkRetry of waiting states. Messages enqueued
// while it runs may or may not be selected. Retried messages keep their
// ids; their queues' consumers wake at once. ErrUnknownQueue when Queue
// names a queue that does not exist.
func (c *Client) Bulk(ctx context.Context, action BulkAction, f MessageFilter) (int, error) {
	bf, err := f.check(action)
	if err != nil {
		return 0, err
	}
	n, running, err := c.mq.Bulk(ctx, driver.BulkAction(action), bf)
	for _, id := range running {
		c.workers.Cancelled(id)
	}
	return n, err
}

// check validates a filter for action and converts it to the engine's.
func (f MessageFilter) check(action BulkAction) (mq.BulkFilter, error) {
	var bf mq.BulkFilter
	if f.Queue != "" {
		if err := ValidateQueue(f.Queue); err != nil {
			return bf, err
		}
		bf.Queues = []string{f.Queue}
	}
	if f.Kind != "" {
		if err := ValidateKind(f.Kind); err != nil {
			return bf, err
		}
	}
	states := make([]string, len(f.States))
	for i, s := range f.States {
		states[i] = string(s)
	}
	var err error
	if bf.States, err = mq.CheckBulk(driver.BulkAction(action), states); err != nil {
		return bf, err
	}
	switch {
	case f.OlderThan < 0:
		return bf, fmt.Errorf("%w: negative age %v", ErrInvalid, f.OlderThan)
	case f.Limit < 0:
		return bf, fmt.Errorf("%w: negative limit %d", ErrInvalid, f.Limit)
	case !f.All && f.Queue == "" && len(f.States) == 0 && f.Kind == "" && f.OlderThan == 0:
		return bf, fmt.Errorf("%w: bulk %s with no filter: name a queue, states, a kind or an age, or set All to act on every message", ErrInvalid, action)
	}
	bf.Kind, bf.Limit = f.Kind, f.Limit
	if f.OlderThan > 0 {
		bf.Before = time.Now().Add(-f.OlderThan)
	}
	return bf, nil
}
