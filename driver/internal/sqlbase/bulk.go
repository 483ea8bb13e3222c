package sqlbase

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/driver"
)

// MessagesBulk implements driver.QueueTx: one message after another, by
// the statements of the calls on one message, in t's transaction (the
// engine bounds the ids of one call).
func (t *Tx) MessagesBulk(ctx context.Context, action driver.BulkAction, queue string, ids []int64, finished bool) (int, []int64, error) {
	n := 0
	var running []int64
	for _, id := range ids {
		var done bool
		var err error
		switch {
		case action == driver.BulkCancel && !finished:
			var state driver.MessageState
			state, err = t.MessageCancel(ctx, id)
			done = state == driver.MessageReady || state == driver.MessageClaimed
			if state == driver.MessageClaimed {
				running = append(running, id)
			}
		case action == driver.BulkDelete && !finished:
			done, err = affected(t.exec(ctx, "message_delete_waiting", id, queue))
		case action == driver.BulkRetry && !finished:
			// Waiting only: one that finished since stays finished.
			done, err = affected(t.exec(ctx, "message_retry_now", id, queue))
		case action == driver.BulkDelete:
			done, err = affected(t.exec(ctx, "finished_delete_retried", id, queue))
		case action == driver.BulkRetry:
			done, err = t.retryFinished(ctx, queue, id)
		default:
			return 0, nil, fmt.Errorf("bulk %s of finished messages: not an action", action)
		}
		if err != nil {
			return 0, nil, fmt.Errorf("bulk %s of message %d: %w", action, id, err)
		}
		if done {
			n++
		}
	}
	return n, running, nil
}
