package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	"github.com/batonhq/baton/internal/errs"
)

// Execer is the caller's own transaction (baton.Execer): a *sql.Tx, or a
// pgx transaction through postgres.PgxTx.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// rowQuerier reads one row: *sql.Tx has it.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// rowsQuerier reads rows: *sql.Tx has it.
type rowsQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// payloadsQuerier reads rows of an id and a payload: the adapters of other
// transaction types (postgres.PgxTx) have it.
type payloadsQuerier interface {
	QueryIDPayloads(ctx context.Context, query string, args ...any) ([]int64, [][]byte, error)
}

// rowScanner reads one row: the adapters of other transaction types
// (postgres.PgxTx) have it.
type rowScanner interface {
	ScanRow(ctx context.Context, query string, args []any, dest ...any) error
}

// errNoRows: the caller's transaction type can execute statements but not
// read rows.
var errNoRows = errors.New("cannot read rows")

// ScanRow runs a statement that returns one row in the caller's
// transaction and scans it into dest.
func ScanRow(ctx context.Context, tx Execer, st driver.Statement, dest ...any) error {
	switch t := tx.(type) {
	case rowScanner:
		return t.ScanRow(ctx, st.Query, st.Args, dest...)
	case rowQuerier:
		return t.QueryRowContext(ctx, st.Query, st.Args...).Scan(dest...)
	}
	return fmt.Errorf("%w: %T %w (give a *sql.Tx or postgres.PgxTx)", errs.ErrInvalid, tx, errNoRows)
}

// InsertTx inserts messages in the caller's transaction and says which
// were duplicates of a unique key's holder; the queue's consumers wake
// once tx commits.
func (e *Engine) InsertTx(ctx context.Context, tx Execer, queue string, rows []driver.NewMessage) (ids []int64, dups []bool, err error) {
	if !e.Known(queue) {
		// In the caller's transaction: on SQLite it holds the only write
		// lock, so baton's own connection could not register the queue.
		rq, rargs := e.queue.QueueRegisterStatement(queue)
		if _, err := tx.ExecContext(ctx, rq, rargs...); err != nil {
			return nil, nil, fmt.Errorf("baton: enqueue: register queue: %w", err)
		}
	}
	ids, dups = make([]int64, len(rows)), make([]bool, len(rows))
	for i, m := range rows {
		if ids[i], dups[i], err = e.insertUniqueTx(ctx, tx, queue, m); err != nil {
			return nil, nil, fmt.Errorf("baton: enqueue: %w", err)
		}
	}
	if err := e.NotifyIn(ctx, tx, bus.QueueChannel(queue), ""); err != nil {
		return nil, nil, fmt.Errorf("baton: enqueue: wake-up: %w", err)
	}
	return ids, dups, nil
}

// insertUniqueTx inserts m in the caller's transaction, taking its unique
// key first if it has one: when the key holds, it inserts nothing and
// returns the holder's id, dup true (the key's row stays locked until tx
// ends, so concurrent enqueues of the key wait for it).
func (e *Engine) insertUniqueTx(ctx context.Context, tx Execer, queue string, m driver.NewMessage) (id int64, dup bool, err error) {
	if m.UniqueKey == "" {
		id, err = e.insertTx(ctx, tx, m)
		return id, false, err
	}
	st := e.queue.UniqueStatements(queue, m.UniqueKey, m.UniqueExpires)
	res, err := tx.ExecContext(ctx, st.Insert.Query, st.Insert.Args...)
	if err != nil {
		return 0, false, fmt.Errorf("unique key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, false, err
	} else if n != 1 {
		if holder, holds, err := holderTx(ctx, tx, st.Get, m.UniqueStates); err != nil || holds {
			return holder, holds, err
		}
	}
	if id, err = e.insertTx(ctx, tx, m); err != nil {
		return 0, false, err
	}
	if id == 0 {
		return 0, false, fmt.Errorf("%w: a unique key in the caller's transaction needs the new id: give a *sql.Tx or postgres.PgxTx", errs.ErrInvalid)
	}
	set := st.Set(id)
	_, err = tx.ExecContext(ctx, set.Query, set.Args...)
	return id, false, err
}

// holderTx reads the message that holds a unique key whose row exists
// (get), and says whether it holds the key against a message whose unique
// states are states.
func holderTx(ctx context.Context, tx Execer, get driver.Statement, states []string) (int64, bool, error) {
	var holder int64
	var period, over int
	var state string
	if err := ScanRow(ctx, tx, get, &holder, &period, &over, &state); err != nil {
		return 0, false, fmt.Errorf("unique key: %w", err)
	}
	return holder, driver.UniqueHolds(period == 1, over == 1, state, states), nil
}

// insertTx inserts one message in the caller's transaction and returns its
// id when the transaction type can say it.
func (e *Engine) insertTx(ctx context.Context, tx Execer, m driver.NewMessage) (int64, error) {
	q, args, returnsID := e.queue.EnqueueStatement(m)
	var id int64
	if returnsID {
		err := ScanRow(ctx, tx, driver.Statement{Query: q, Args: args}, &id)
		if errors.Is(err, errNoRows) {
			_, err = tx.ExecContext(ctx, q, args...) // an Execer that reads nothing
		}
		return id, err
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	id, _ = res.LastInsertId()
	return id, nil
}

// WaitingTx lists the waiting messages of one kind in queue as the
// caller's transaction sees them, ids and payloads in claim order.
func (e *Engine) WaitingTx(ctx context.Context, tx Execer, queue, kind string) (ids []int64, payloads [][]byte, err error) {
	q, args := e.queue.WaitingStatement(queue, kind)
	switch t := tx.(type) {
	case payloadsQuerier:
		return t.QueryIDPayloads(ctx, q, args...)
	case rowsQuerier:
		rows, err := t.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, nil, fmt.Errorf("baton: waiting messages: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var p []byte
			if err := rows.Scan(&id, &p); err != nil {
				return nil, nil, fmt.Errorf("baton: waiting messages: %w", err)
			}
			ids, payloads = append(ids, id), append(payloads, p)
		}
		return ids, payloads, rows.Err()
	}
	return nil, nil, fmt.Errorf("%w: %T %w (give a *sql.Tx or postgres.PgxTx)", errs.ErrInvalid, tx, errNoRows)
}

// NotifyIn sends an internal notification in tx: it goes out with tx's
// commit.
func (e *Engine) NotifyIn(ctx context.Context, tx Execer, channel, payload string) error {
	q, args := e.notif.NotifyStatement(channel, payload)
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("baton: notify: %w", err)
	}
	return nil
}

// CompleteTx completes claim cl of a message of queue in the caller's
// transaction, with its handler's output (JSON, nil for none);
// ErrNotClaimed when the claim is no longer current.
func (e *Engine) CompleteTx(ctx context.Context, tx Execer, cl driver.Claim, queue string, output []byte) error {
	if output != nil && e.cfg.KeepCompleted {
		if err := e.outputTx(ctx, tx, cl, queue, output); err != nil {
			return err
		}
	}
	var n int64
	for _, st := range e.queue.CompleteStatements(cl, e.cfg.KeepCompleted) {
		res, err := tx.ExecContext(ctx, st.Query, st.Args...)
		if err != nil {
			return fmt.Errorf("baton: complete: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("baton: complete: %w", err)
		}
	}
	if n != 1 {
		return NotClaimed(cl.ID, queue)
	}
	return nil
}

// NotClaimed is the error of a call on a claim that is no longer current.
func NotClaimed(id int64, queue string) error {
	return fmt.Errorf("%w: message %d of queue %q", errs.ErrNotClaimed, id, queue)
}

// Caller runs the queue's control calls in the caller's own transaction:
// what each changes happens if and only if that transaction commits, and
// the wake-ups it sends go out with that commit.
type Caller struct {
	e  *Engine
	tx driver.CallerStatements
	q  driver.CallerQueueTx
}

// Caller returns the control calls in the caller's transaction tx.
func (e *Engine) Caller(tx driver.CallerStatements) Caller {
	return Caller{e: e, tx: tx, q: e.queue.CallerQueueTx(tx)}
}

// Notify sends an internal notification with the commit.
func (c Caller) Notify(ctx context.Context, channel, payload string) error {
	return c.e.NotifyIn(ctx, c.tx, channel, payload)
}

// Cancel cancels message id and says whether it was running (its handler
// must be told).
func (c Caller) Cancel(ctx context.Context, id int64) (running bool, err error) {
	state, err := c.q.MessageCancel(ctx, id)
	return Cancelled(id, state, err)
}

// Cancelled reads the outcome of a cancellation: whether the message was
// running (its handler must be told), or the error to report.
func Cancelled(id int64, state driver.MessageState, err error) (running bool, _ error) {
	if err != nil {
		return false, fmt.Errorf("baton: cancel message %d: %w", id, err)
	}
	switch state {
	case "":
		return false, fmt.Errorf("%w: %d", errs.ErrNotFound, id)
	case driver.MessageReady:
		return false, nil
	case driver.MessageClaimed:
		return true, nil
	}
	return false, fmt.Errorf("%w: message %d is %s", errs.ErrFinished, id, StateName(driver.Message{State: state}, time.Now()))
}

// Get reads message id as tx sees it, whatever its state; found false
// when there is none.
func (c Caller) Get(ctx context.Context, id int64) (m driver.Message, found bool, err error) {
	return c.q.MessageGet(ctx, id)
}

// RetryNow makes a waiting message due once tx commits, and wakes the
// queue's consumers then.
func (c Caller) RetryNow(ctx context.Context, queue string, id int64) error {
	done, state, err := c.q.MessageRetryNow(ctx, queue, id)
	if err := OnWaitingResult(queue, id, done, state, err); err != nil {
		return err
	}
	return c.Notify(ctx, bus.QueueChannel(queue), "")
}

// Delete deletes a message that is not running (waiting, or in the
// history) once tx commits.
func (c Caller) Delete(ctx context.Context, queue string, id int64) error {
	done, state, err := c.q.MessageDelete(ctx, queue, id)
	return OnWaitingResult(queue, id, done, state, err)
}

// OnWaitingResult is the error of a call on one waiting message, given
// whether it acted and, when not, the message's state.
func OnWaitingResult(queue string, id int64, done bool, state driver.MessageState, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("baton: message %d of %s: %w", id, queue, err)
	case done:
		return nil
	case state == driver.MessageClaimed:
		return fmt.Errorf("%w: message %d of %s", errs.ErrRunning, id, queue)
	case state == driver.MessageWaiting:
		return fmt.Errorf("%w: message %d of %s waits for its parents (cancel or delete it instead)", errs.ErrInvalid, id, queue)
	}
	return fmt.Errorf("%w: %d in %s", errs.ErrNotFound, id, queue)
}

// SetPaused pauses or resumes queue once tx commits: every process hears
// of it then (bus.Pause), and a resumed queue's consumers wake.
func (c Caller) SetPaused(ctx context.Context, queue string, paused bool) error {
	found, err := c.q.QueuePause(ctx, queue, paused)
	if err := PauseResult(queue, found, err); err != nil {
		return err
	}
	if err := c.Notify(ctx, bus.Pause, queue); err != nil || paused {
		return err
	}
	return c.Notify(ctx, bus.QueueChannel(queue), "")
}

// PauseResult is the error of pausing or resuming queue.
func PauseResult(queue string, found bool, err error) error {
	if err != nil {
		return fmt.Errorf("baton: pause queue: %w", err)
	}
	if !found {
		return fmt.Errorf("%w: %q", errs.ErrUnknownQueue, queue)
	}
	return nil
}

// PurgeDead deletes the dead letters of queue once tx commits.
func (c Caller) PurgeDead(ctx context.Context, queue string) (int, error) {
	return c.deadLetters(ctx, "purge dead letters", queue, driver.CallerQueueTx.DeadPurge)
}

// Redrive moves every dead letter of queue back to it, ready now, once tx
// commits, and wakes its consumers then.
func (c Caller) Redrive(ctx context.Context, queue string) (int, error) {
	n, err := c.deadLetters(ctx, "redrive", queue, driver.CallerQueueTx.DeadRedriveAll)
	if err == nil && n > 0 {
		err = c.Notify(ctx, bus.QueueChannel(queue), "")
	}
	return n, err
}

// deadLetters runs op on the dead letters of queue, which must exist;
// verb names the call in its errors.
func (c Caller) deadLetters(ctx context.Context, verb, queue string,
	op func(driver.CallerQueueTx, context.Context, string) (int, error)) (int, error) {
	ok, err := c.q.QueueExists(ctx, queue)
	switch {
	case err != nil:
		return 0, fmt.Errorf("baton: %s: %w", verb, err)
	case !ok:
		return 0, fmt.Errorf("%w: %q", errs.ErrUnknownQueue, queue)
	}
	n, err := op(c.q, ctx, queue)
	if err != nil {
		return 0, fmt.Errorf("baton: %s: %w", verb, err)
	}
	return n, nil
}

// Retry gives the claimed message back for another attempt after delay
// (to the back of its queue when toBack), or buries it when dead; a
// message cancelled while it ran ends cancelled instead. It says how the
// message ended: "" when it waits for another attempt, else
// driver.MessageDead or driver.MessageCancelled.
func (c Caller) Retry(ctx context.Context, cl driver.Claim, queue string, delay time.Duration, toBack bool, e driver.AttemptError, dead bool) (driver.MessageState, error) {
	if dead {
		return driver.MessageDead, c.Finish(ctx, cl, queue, driver.MessageDead, &e)
	}
	ok, err := c.q.MessageRetry(ctx, cl, max(delay, 0), toBack, e)
	switch {
	case err != nil:
		return "", fmt.Errorf("baton: retry: %w", err)
	case !ok:
		// Not ours any more, or cancelled: only then can it be finished.
		return driver.MessageCancelled, c.Finish(ctx, cl, queue, driver.MessageCancelled, &e)
	case delay <= 0:
		return "", c.Notify(ctx, bus.QueueChannel(queue), "")
	}
	return "", nil
}

// Finish moves the claimed message to the history in state; the queue's
// consumers wake with the commit (the next message of an ordered queue or
// of its key may go then).
func (c Caller) Finish(ctx context.Context, cl driver.Claim, queue string, state driver.MessageState, e *driver.AttemptError) error {
	ok, err := c.q.MessageFinish(ctx, cl, state, e)
	switch {
	case err != nil:
		return fmt.Errorf("baton: finish message: %w", err)
	case !ok:
		return NotClaimed(cl.ID, queue)
	}
	return c.Notify(ctx, bus.QueueChannel(queue), "")
}

// Extend renews the claim's lease for d from the statement's time once tx
// commits.
func (c Caller) Extend(ctx context.Context, cl driver.Claim, queue string, d time.Duration) error {
	ok, err := c.q.MessageExtend(ctx, cl, d)
	switch {
	case err != nil:
		return fmt.Errorf("baton: extend: %w", err)
	case !ok:
		return NotClaimed(cl.ID, queue)
	}
	return nil
}

// InCallerTx is the caller's transaction tx for the call what, which needs
// one: a pool would commit each statement on its own.
func InCallerTx(tx Execer, what string) (CallerTx, error) {
	switch tx.(type) {
	case nil:
		return CallerTx{}, fmt.Errorf("%w: %s: nil transaction", errs.ErrInvalid, what)
	case *sql.DB:
		return CallerTx{}, fmt.Errorf("%w: %s needs a transaction (a *sql.Tx or postgres.PgxTx), not a *sql.DB", errs.ErrInvalid, what)
	}
	return CallerTx{tx}, nil
}

// CallerTx runs the driver's statements in the caller's transaction: it
// is a driver.CallerTx (LockTx) and a driver.CallerStatements (the queue
// control calls' ...Tx variants).
type CallerTx struct{ tx Execer }

func (t CallerTx) Exec(ctx context.Context, query string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, query, args...)
	return err
}

func (t CallerTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, query, args...)
}

func (t CallerTx) ScanRow(ctx context.Context, query string, args []any, dest ...any) error {
	return ScanRow(ctx, t.tx, driver.Statement{Query: query, Args: args}, dest...)
}

// Optional is the options given to a call with optional options, if any.
func Optional[T any](opts []T) T {
	var o T
	if len(opts) > 0 {
		o = opts[0]
	}
	return o
}

// First is the outcome of enqueuing one message: its id, or the holder's
// with ErrDuplicate.
func First(ids []int64, dups []bool, err error) (int64, error) {
	switch {
	case err != nil:
		return 0, err
	case dups[0]:
		return ids[0], fmt.Errorf("%w: message %d holds the unique key", errs.ErrDuplicate, ids[0])
	}
	return ids[0], nil
}
