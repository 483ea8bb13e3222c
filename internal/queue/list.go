package queue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/txn"
)

// finishedStates maps the history's state names to the stored states.
var finishedStates = map[string]driver.MessageState{
	StateCompleted: driver.MessageCompleted, StateCancelled: driver.MessageCancelled, StateDead: driver.MessageDead,
}

// Segment is one queue and state (a state name) of a listing.
type Segment struct{ Queue, State string }

// List reads a page of up to limit messages from the segments in turn,
// from the one the position after names, of the kind ("" for any) and
// user data d selects, and returns the position after
// the page ("" when there is no more).
func (e *Engine) List(ctx context.Context, segs []Segment, kind string, d driver.DataFilter, after string, limit int) ([]driver.Message, string, error) {
	start, pos, err := parsePosition(segs, after)
	if err != nil {
		return nil, "", err
	}
	var out []driver.Message
	for i := start; i < len(segs); i++ {
		page, next, err := e.listOne(ctx, segs[i], kind, d, pos, limit-len(out))
		if err != nil {
			return nil, "", err
		}
		out = append(out, page...)
		pos = ""
		switch {
		case next != "":
			return out, segs[i].Queue + "/" + segs[i].State + "/" + next, nil
		case len(out) == limit && i+1 < len(segs):
			return out, segs[i+1].Queue + "/" + segs[i+1].State + "/", nil
		}
	}
	return out, "", nil
}

// parsePosition finds the segment a position names and the position in it.
func parsePosition(segs []Segment, after string) (int, string, error) {
	if after == "" {
		return 0, "", nil
	}
	parts := strings.SplitN(after, "/", 3)
	if len(parts) == 3 {
		for i, s := range segs {
			if s.Queue == parts[0] && s.State == parts[1] {
				return i, parts[2], nil
			}
		}
	}
	return 0, "", badPosition(after)
}

func badPosition(pos string) error {
	return fmt.Errorf("%w: position %q is not one this listing returned", errs.ErrInvalid, pos)
}

// listOne reads up to limit messages of one queue and state after pos.
func (e *Engine) listOne(ctx context.Context, s Segment, kind string, d driver.DataFilter, pos string, limit int) ([]driver.Message, string, error) {
	if stored, ok := finishedStates[s.State]; ok {
		return e.listHistory(ctx, s.Queue, stored, kind, d, pos, limit)
	}
	f := waitingFilter(s, kind, limit)
	f.DataFilter = d
	if pos != "" {
		if _, err := fmt.Sscanf(pos, "%d.%d.%d", &f.After.Priority, &f.After.OrderAt, &f.After.ID); err != nil {
			return nil, "", badPosition(pos)
		}
	}
	return e.readPage(ctx, limit, func(tx driver.QueueTx) ([]driver.Message, error) { return tx.MessageList(ctx, f) },
		func(last driver.Message) string {
			if f.Due != nil && !*f.Due { // by due time
				return fmt.Sprintf("0.%d.%d", last.RunAt.UnixMicro(), last.ID)
			}
			return fmt.Sprintf("%d.%d.%d", last.Priority, last.OrderAt.UnixMicro(), last.ID)
		})
}

// waitingFilter selects a page of limit messages (and one more) of a
// segment of waiting or running messages, of one kind if kind is set.
func waitingFilter(s Segment, kind string, limit int) driver.ListFilter {
	f := driver.ListFilter{Queue: s.Queue, State: driver.MessageReady, Kind: kind, Limit: limit + 1}
	yes, no := true, false
	switch s.State {
	case StateRunning:
		f.State = driver.MessageClaimed
	case StatePending:
		f.State = driver.MessageWaiting
	case StateReady:
		f.Due = &yes
	case StateScheduled:
		f.Due, f.Retried = &no, &no
	case StateRetrying:
		f.Due, f.Retried = &no, &yes
	}
	return f
}

// readPage reads a page of limit messages (read asks for one more, which
// says whether there is a next page) and the position after it.
func (e *Engine) readPage(ctx context.Context, limit int, read func(driver.QueueTx) ([]driver.Message, error),
	position func(last driver.Message) string) ([]driver.Message, string, error) {
	var rows []driver.Message
	// One statement, outside any transaction: a listing never waits for
	// SQLite's write lock (a program's open transaction may hold it).
	err := txn.Retrying(ctx, e.drv, func() (err error) {
		rows, err = read(e.drv.NoTx())
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("baton: list messages: %w", err)
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		next = position(rows[limit-1])
	}
	return rows, next, nil
}

// listHistory reads up to limit finished messages, newest first.
func (e *Engine) listHistory(ctx context.Context, queue string, state driver.MessageState, kind string, d driver.DataFilter, pos string, limit int) ([]driver.Message, string, error) {
	var before int64
	if pos != "" {
		var err error
		if before, err = strconv.ParseInt(pos, 10, 64); err != nil || before <= 0 {
			return nil, "", badPosition(pos)
		}
	}
	return e.readPage(ctx, limit, func(tx driver.QueueTx) ([]driver.Message, error) {
		return tx.HistoryList(ctx, queue, state, kind, d, before, limit+1)
	}, func(last driver.Message) string { return strconv.FormatInt(last.ID, 10) })
}

// Retention is how long finished messages stay in the history (negative:
// none are kept).
type Retention struct{ Completed, Cancelled, Dead time.Duration }

// Filled is r with the defaults for zeros: completed and cancelled
// messages 24h, dead ones 7 days.
func (r Retention) Filled() Retention {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&r.Completed, 24*time.Hour)
	def(&r.Cancelled, 24*time.Hour)
	def(&r.Dead, 7*24*time.Hour)
	return r
}

// ParseState checks a state name (one of States).
func ParseState(s string) (string, error) {
	if !slices.Contains(States, s) {
		return "", fmt.Errorf("%w: message state %q: use pending, scheduled, ready, running, retrying, completed, cancelled or dead", errs.ErrInvalid, s)
	}
	return s, nil
}

// CheckListing validates a listing's queue and state ("" for every one)
// and its page size, 1 to 1000.
func CheckListing(queue, state string, limit int) error {
	if queue != "" {
		if err := ValidateName("queue", queue); err != nil {
			return err
		}
	}
	if state != "" {
		if _, err := ParseState(state); err != nil {
			return err
		}
	}
	if limit < 1 || limit > 1000 {
		return fmt.Errorf("%w: limit %d: give 1 to 1000", errs.ErrInvalid, limit)
	}
	return nil
}

// pruneBatch is how many finished messages one prune statement deletes.
const pruneBatch = 1000

// PruneHistory is the history pruner's run: it deletes finished messages
// past their retention, in batches, at most 50 batches a state (the next
// run goes on), so that it never holds locks long.
func (e *Engine) PruneHistory(ctx context.Context) error {
	r := e.cfg.Retention
	for _, p := range []struct {
		state driver.MessageState
		keep  time.Duration
	}{{driver.MessageCompleted, r.Completed}, {driver.MessageCancelled, r.Cancelled}, {driver.MessageDead, r.Dead}} {
		keep := max(p.keep, 0)
		for range 50 {
			n, err := e.drv.NoTx().HistoryPrune(ctx, p.state, keep, pruneBatch)
			if err != nil {
				return err
			}
			if n < pruneBatch {
				break
			}
		}
	}
	return nil
}

// Segments are the segments of a listing of every state in states of
// every queue in queues, queue by queue.
func Segments[S ~string](queues []string, states []S) []Segment {
	var segs []Segment
	for _, q := range queues {
		for _, s := range states {
			segs = append(segs, Segment{Queue: q, State: string(s)})
		}
	}
	return segs
}
