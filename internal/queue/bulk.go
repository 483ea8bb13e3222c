package queue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/jobevents"
	"github.com/batonhq/baton/internal/txn"
)

// BulkBatch is how many messages one transaction of a bulk action takes
// at most, so that a bulk action on a big queue never holds many row
// locks, nor SQLite's write lock, for long.
const BulkBatch = 500

// bulkStates are the states each bulk action applies to, in listing
// order: the default when a filter names none.
var bulkStates = map[driver.BulkAction][]string{
	driver.BulkCancel: {StatePending, StateScheduled, StateReady, StateRunning, StateRetrying},
	driver.BulkDelete: {StatePending, StateScheduled, StateReady, StateRetrying, StateCompleted, StateCancelled, StateDead},
	driver.BulkRetry:  {StateScheduled, StateRetrying, StateCompleted, StateCancelled, StateDead},
}

// BulkFilter selects the messages of a bulk action.
type BulkFilter struct {
	// Queues to act on (nil: every queue).
	Queues []string
	// States (names) to act on; nil: every state the action applies to.
	States []string
	// Kind: only messages of this kind ("" for any).
	Kind string
	// Before: only messages created before it (finished ones: that
	// finished before it); zero: any.
	Before time.Time
	// Limit: at most this many (0: no limit).
	Limit int
}

// CheckBulk checks a bulk action and its states, and returns the states
// it acts on (those the action applies to when states is empty).
func CheckBulk(action driver.BulkAction, states []string) ([]string, error) {
	applies, ok := bulkStates[action]
	if !ok {
		return nil, fmt.Errorf("%w: bulk action %q: use cancel, delete or retry", errs.ErrInvalid, action)
	}
	if len(states) == 0 {
		return applies, nil
	}
	for _, s := range states {
		if _, err := ParseState(s); err != nil {
			return nil, err
		}
		if !slices.Contains(applies, s) {
			return nil, fmt.Errorf("%w: %s applies to %s messages, not %s ones", errs.ErrInvalid, action, strings.Join(applies, ", "), s)
		}
	}
	// In listing order, each state once.
	var out []string
	for _, s := range States {
		if slices.Contains(states, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// Bulk applies action to the messages f selects (its states checked by
// CheckBulk), page by page along the listing's indexes, each page of at
// most BulkBatch messages in one transaction. It returns how many it
// acted on and the running messages cancel asked to stop (their
// handlers must be told); the queues of retried messages are woken.
func (e *Engine) Bulk(ctx context.Context, action driver.BulkAction, f BulkFilter) (n int, running []int64, err error) {
	queues := f.Queues
	if queues == nil {
		if queues, err = e.Queues(ctx); err != nil {
			return 0, nil, err
		}
	}
	for _, q := range f.Queues {
		if _, err := inQueueTx(ctx, e, q, func(driver.Tx) (bool, error) { return true, nil }); err != nil {
			return 0, nil, err
		}
	}
	segs, pos := Segments(queues, f.States), ""
	for f.Limit == 0 || n < f.Limit {
		page, next, err := e.List(ctx, segs, f.Kind, driver.DataFilter{}, pos, BulkBatch)
		if err != nil {
			return n, running, err
		}
		k, r, err := e.bulkPage(ctx, action, f, page, n)
		n, running = n+k, append(running, r...)
		if err != nil || next == "" {
			return n, running, err
		}
		pos = next
	}
	return n, running, nil
}

// bulkGroup is the messages of a page in one queue and table.
type bulkGroup struct {
	queue    string
	finished bool
	ids      []int64
}

// bulkPage applies action, in one transaction, to the messages of a
// listed page that f's age selects, up to f's limit (done acted on
// already).
func (e *Engine) bulkPage(ctx context.Context, action driver.BulkAction, f BulkFilter, page []driver.Message, done int) (int, []int64, error) {
	var groups []bulkGroup
	taken := 0
	listed := map[int64]driver.Message{} // a cancel's: their events
	for _, m := range page {
		fin := m.State == driver.MessageCompleted || m.State == driver.MessageCancelled || m.State == driver.MessageDead
		at := m.CreatedAt
		if fin {
			at = m.FinishedAt
		}
		if !f.Before.IsZero() && !at.Before(f.Before) {
			continue
		}
		if f.Limit > 0 && done+taken >= f.Limit {
			break
		}
		taken++
		if action == driver.BulkCancel {
			listed[m.ID] = m
		}
		if i := len(groups) - 1; i >= 0 && groups[i].queue == m.Queue && groups[i].finished == fin {
			groups[i].ids = append(groups[i].ids, m.ID)
			continue
		}
		groups = append(groups, bulkGroup{queue: m.Queue, finished: fin, ids: []int64{m.ID}})
	}
	if len(groups) == 0 {
		return 0, nil, nil
	}
	var n int
	var running []int64
	var evs []jobevents.Event
	err := txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		n, running, evs = 0, nil, nil
		for _, g := range groups {
			k, r, err := tx.MessagesBulk(ctx, action, g.queue, g.ids, g.finished)
			if err != nil {
				return err
			}
			n, running = n+k, append(running, r...)
			evs = append(evs, cancelledEvents(listed, g.ids, k, r)...)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("baton: bulk %s: %w", action, err)
	}
	if len(evs) > 0 && e.cfg.JobEvents != nil {
		e.cfg.JobEvents(evs)
	}
	if action == driver.BulkRetry && n > 0 {
		for _, g := range groups {
			e.Wake(g.queue)
		}
	}
	return n, running, nil
}

// cancelledEvents are the job events of a bulk cancel of ids (listed
// holds their listed rows) that acted on k, running the ones asked to
// stop (whose workers send their events): one for each waiting message
// cancelled, when every one that was not running was (otherwise which
// ones finished meanwhile is not known, and none is sent).
func cancelledEvents(listed map[int64]driver.Message, ids []int64, k int, running []int64) []jobevents.Event {
	if len(listed) == 0 || k != len(ids) || k == len(running) {
		return nil
	}
	evs := make([]jobevents.Event, 0, k-len(running))
	for _, id := range ids {
		if m := listed[id]; !slices.Contains(running, id) {
			evs = append(evs, jobevents.New(id, m.Queue, m.Kind, "cancelled", m.Attempt, ""))
		}
	}
	return evs
}
