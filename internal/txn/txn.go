// Package txn runs the engine's statements: the one transaction-retry
// helper (a statement or transaction runs again while the database reports
// a transient conflict: a serialization failure, a deadlock between its
// own statements, a busy SQLite file), and SettleDeadline, which makes a
// statement cut off by its context's deadline report the context's cause.
package txn

import (
	"context"
	"time"

	"github.com/batonhq/baton/driver"
)

// MaxRetries is how many times an operation runs again at most.
const MaxRetries = 20

// Retrying runs op, and again while it fails with a transient conflict
// inside the database (d.IsRetryable), at most MaxRetries more times with
// a backoff growing by a millisecond each time, until ctx ends.
func Retrying(ctx context.Context, d driver.Driver, op func() error) error {
	for attempt := 0; ; attempt++ {
		err := op()
		if err == nil || !d.IsRetryable(err) || attempt >= MaxRetries || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
}

// InTx runs fn in a transaction of d and commits it, all again when the
// database reports a transient conflict. fn must start afresh each time.
func InTx(ctx context.Context, d driver.Driver, fn func(tx driver.Tx) error) error {
	return Retrying(ctx, d, func() error { return Once(ctx, d, fn) })
}

// Once runs fn in a transaction of d begun with ctx and commits it, once.
func Once(ctx context.Context, d driver.Driver, fn func(tx driver.Tx) error) error {
	tx, err := d.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // fn's error is the one to report
		return err
	}
	return tx.Commit()
}

// SettleDeadline waits for ctx to be done when its deadline has passed: a
// statement (or a connection's dial) can fail on the deadline a moment
// before the context's own timer marks it done, and the caller must see
// the context's cause (ErrTimeout, ErrEmpty), not the network's "i/o
// timeout".
func SettleDeadline(ctx context.Context) {
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		<-ctx.Done()
	}
}

// InTxV is InTx for a fn that returns a value: the value of the attempt
// that committed, or the zero value with the error.
func InTxV[T any](ctx context.Context, d driver.Driver, fn func(tx driver.Tx) (T, error)) (T, error) {
	var v T
	err := InTx(ctx, d, func(tx driver.Tx) error {
		var err error
		v, err = fn(tx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}
