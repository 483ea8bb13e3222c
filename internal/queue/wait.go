package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/claimrule"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/txn"
)

// Lease is the lease of the session a claim is for: a wait ends when it
// is lost or ended.
type Lease interface {
	Done() <-chan struct{}
	Err() error
}

// Request is one claim's arguments, checked and filled in.
type Request struct {
	Session, Queue string
	Mode           claimrule.Mode
	Kind           string
	Visibility     time.Duration
	Max            int
	// Wait is how long to wait for a message when none is ready: 0 tries
	// once.
	Wait time.Duration
	// Aliases are kinds claimed as Kind too (Parallel with a Kind only),
	// first, each in a claim of its own.
	Aliases []string
}

// ClaimWaiting claims what the mode allows now for the session (h holds
// what it knows it holds), in serving order. With nothing ready it waits
// up to r.Wait for a wake-up of the queue: a notification, the poll of
// waiting consumers (PollWaiting), which covers a lost one, or the time
// its next message is due. ErrEmpty when none came.
func (e *Engine) ClaimWaiting(ctx context.Context, h *Holds, lease Lease, r Request) ([]*driver.Message, error) {
	if r.Wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, r.Wait, errs.ErrEmpty)
		defer cancel()
	}
	var wake chan struct{}
	for {
		e.cfg.Tries.Add(1)
		rows, dueIn, err := e.claimKinds(ctx, h, r)
		if err != nil {
			txn.SettleDeadline(ctx)
			return nil, emptyOr(ctx, fmt.Errorf("baton: claim: %w", err))
		}
		if len(rows) > 0 {
			return rows, nil
		}
		if e.cfg.Rescue(ctx) {
			continue // a dead worker's messages may be ready now
		}
		if r.Wait == 0 {
			return nil, errs.ErrEmpty
		}
		if wake == nil {
			// Wait only once registered, and try again right after
			// registering: a message committed between the attempt and
			// the registration is not missed. Claims that find work at
			// once never register (registering can cost a query).
			if err := e.cfg.Listening(ctx); err != nil {
				return nil, emptyOr(ctx, err)
			}
			wake = e.cfg.Waits.Add(r.Queue)
			e.cfg.Notifying(true)
			defer e.cfg.Notifying(false)
			defer e.cfg.Waits.Remove(r.Queue, wake)
			continue
		}
		if err := awaitWork(ctx, lease, wake, dueIn); err != nil {
			return nil, err
		}
	}
}

// emptyOr is ErrEmpty when ctx ended because a claim's wait ran out, err
// otherwise.
func emptyOr(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), errs.ErrEmpty) {
		return errs.ErrEmpty
	}
	return err
}

// awaitWork waits for a wake-up of the queue, or the time its next
// message is due (dueIn, when known).
func awaitWork(ctx context.Context, lease Lease, wake chan struct{}, dueIn time.Duration) error {
	var due <-chan time.Time
	if dueIn > 0 {
		t := time.NewTimer(dueIn)
		defer t.Stop()
		due = t.C
	}
	select {
	case <-wake:
	case <-due:
	case <-lease.Done():
		return lease.Err()
	case <-ctx.Done():
		return emptyOr(ctx, ctx.Err())
	}
	return nil
}

// claimKinds claims for r: its aliases' messages first, then its kind's
// for what is left of r.Max. A kind renamed keeps its old name as an
// alias while messages of that name wait, which are the older ones. A
// failure after some were claimed returns those (the next claim meets
// it again).
func (e *Engine) claimKinds(ctx context.Context, h *Holds, r Request) (rows []*driver.Message, dueIn time.Duration, err error) {
	if len(r.Aliases) == 0 || r.Kind == "" {
		return e.ClaimKnown(ctx, h, r.Session, r.Queue, r.Mode, r.Kind, r.Visibility, r.Max)
	}
	for _, kind := range slices.Concat(r.Aliases, []string{r.Kind}) {
		more, d, err := e.ClaimKnown(ctx, h, r.Session, r.Queue, r.Mode, kind, r.Visibility, r.Max-len(rows))
		if err != nil {
			if len(rows) > 0 {
				return rows, dueIn, nil
			}
			return nil, d, err
		}
		rows, dueIn = append(rows, more...), d
		if len(rows) == r.Max {
			break
		}
	}
	return rows, dueIn, nil
}
