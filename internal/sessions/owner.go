package sessions

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/txn"
)

// OwnerConfig is what ending a session needs of what sessions hold: the
// lease knows nothing of locks or claims, its owner's funcs free them.
type OwnerConfig struct {
	Driver driver.Driver
	// Release frees, the fast way, what a closing session's own calls
	// hold, before its row is deleted; the delete frees whatever it
	// leaves.
	Release func(ctx context.Context, s *Session)
	// Withdraw takes back the waiting requests of a session given up on
	// or reaped, in the backend's one call where it has one.
	Withdraw func(ctx context.Context, id string)
	// DropLocks, in the transaction that deletes a session's row, removes
	// its lock requests, granting what that frees.
	DropLocks func(ctx context.Context, tx driver.Tx, id string) error
	// ReturnClaims, in the same transaction, gives its claimed messages
	// back to their queues, and returns what to do once it committed (nil
	// for nothing): wake their queues' consumers, send their job events.
	ReturnClaims func(ctx context.Context, tx driver.Tx, id string) (committed func(), err error)
}

// Owner ends a client's sessions and frees what they hold.
type Owner struct{ cfg OwnerConfig }

// NewOwner makes the owner of one client's sessions.
func NewOwner(cfg OwnerConfig) *Owner { return &Owner{cfg: cfg} }

// Close ends a live session and deletes it at once, releasing what it
// holds (Session.Close, Client.Close); an ended one is left as it is.
func (o *Owner) Close(ctx context.Context, s *Session) error {
	if !s.End(errs.ErrClosed) {
		return nil
	}
	o.cfg.Release(ctx, s)
	if err := o.End(ctx, s.ID()); err != nil {
		return fmt.Errorf("baton: close session: %w", err)
	}
	return nil
}

// EndDead ends a session that a client gave up on or reaped (the
// Keeper's EndSession): its requests are withdrawn in the backend's one
// call first, where it has one, then End deletes it, catching what is
// left in its transaction.
func (o *Owner) EndDead(ctx context.Context, id string) error {
	o.cfg.Withdraw(ctx, id)
	return o.End(ctx, id)
}

// End deletes a session and every request it has, granting what that
// frees, and gives its claimed messages back to their queues.
func (o *Owner) End(ctx context.Context, id string) error {
	var committed func()
	err := txn.InTx(ctx, o.cfg.Driver, func(tx driver.Tx) error {
		if err := o.cfg.DropLocks(ctx, tx, id); err != nil {
			return err
		}
		var err error
		if committed, err = o.cfg.ReturnClaims(ctx, tx, id); err != nil {
			return err
		}
		return tx.SessionDelete(ctx, id)
	})
	if err == nil && committed != nil {
		committed()
	}
	return err
}
