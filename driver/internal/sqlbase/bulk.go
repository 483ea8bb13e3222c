package sqlbase

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/driver"
)

// MessagesBulk implements driver.QueueTx: a few statements on the whole
// list (bulk_*), each checking the state its action applies to.
func (t *Tx) MessagesBulk(ctx context.Context, action driver.BulkAction, queue string, ids []int64, finished bool) (int, []int64, error) {
	if len(ids) == 0 {
		return 0, nil, nil
	}
	switch {
	case action == driver.BulkDelete && finished:
		n, err := t.bulk(ctx, "bulk_delete_finished", queue, ids)
		return n, nil, err
	case action == driver.BulkRetry && finished:
		n, err := t.bulk(ctx, "bulk_retry_finished", queue, ids)
		if err == nil && n > 0 {
			_, err = t.bulk(ctx, "bulk_delete_finished", queue, ids)
		}
		return n, nil, err
	case action == driver.BulkDelete:
		n, err := t.bulk(ctx, "bulk_delete_waiting", queue, ids)
		return n, nil, err
	case action == driver.BulkRetry:
		n, err := t.bulk(ctx, "bulk_retry_waiting", queue, ids)
		return n, nil, err
	case action == driver.BulkCancel && !finished:
		return t.bulkCancel(ctx, queue, ids)
	}
	return 0, nil, fmt.Errorf("bulk %s of finished messages: not an action", action)
}

// bulkCancel moves the listed waiting messages to the history as
// cancelled and asks the running ones to stop, which it returns.
func (t *Tx) bulkCancel(ctx context.Context, queue string, ids []int64) (int, []int64, error) {
	n, err := t.bulk(ctx, "bulk_mark_cancelled", queue, ids)
	if err != nil {
		return 0, nil, err
	}
	if n > 0 && !t.db.D.FinishMoves {
		moved, err := t.bulk(ctx, "bulk_move_cancelled", queue, ids)
		if err != nil {
			return 0, nil, err
		}
		deleted, err := t.bulk(ctx, "bulk_delete_cancelled", queue, ids)
		if err == nil && (moved != n || deleted != n) {
			err = fmt.Errorf("bulk cancel: %d marked, %d moved to the history, %d deleted", n, moved, deleted)
		}
		if err != nil {
			return 0, nil, err
		}
	}
	if n == len(ids) {
		return n, nil, nil
	}
	if _, err := t.bulk(ctx, "bulk_request_cancel", queue, ids); err != nil {
		return 0, nil, err
	}
	q, args := t.bulkQuery("bulk_running", queue, ids)
	rows, err := t.q().QueryContext(ctx, q, args...)
	if err != nil {
		return 0, nil, fmt.Errorf("bulk_running: %w", err)
	}
	running, err := ScanAll(rows, ScanInt64)
	if err != nil {
		return 0, nil, fmt.Errorf("bulk_running: %w", err)
	}
	return n + len(running), running, nil
}

// bulk runs the bulk statement name on the listed messages of queue and
// says how many rows it changed.
func (t *Tx) bulk(ctx context.Context, name, queue string, ids []int64) (int, error) {
	q, args := t.bulkQuery(name, queue, ids)
	n, err := rowCount(t.q().ExecContext(ctx, q, args...))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

// bulkQuery is the bulk statement name with its list of ids expanded, and
// its arguments: the queue, then the ids.
func (t *Tx) bulkQuery(name, queue string, ids []int64) (string, []any) {
	return expandList(t.db.Q(name), t.db.D.Numbered, 2, len(ids)), append([]any{queue}, int64Args(ids)...)
}
