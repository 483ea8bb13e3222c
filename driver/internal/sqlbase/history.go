package sqlbase

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton/driver"
)

// A message finishes in three statements of one transaction: it is marked
// with its final state in the messages table (which locks its row and
// checks that the claim is current), copied to the history, and deleted.
// Nobody outside the transaction ever sees the mark. On SQLite the mark
// alone does it all (a trigger; Dialect.FinishMoves).

// atomic runs fn in t's transaction, or, when t runs statements on their
// own, in a transaction of its own (run again after a transient conflict).
func (t *Tx) atomic(ctx context.Context, fn func(*Tx) error) error {
	if t.Tx != nil || t.caller != nil {
		return fn(t)
	}
	for attempt := 1; ; attempt++ {
		tx, err := t.db.BeginTx(ctx)
		if err != nil {
			return err
		}
		if err = fn(tx); err == nil {
			err = tx.Commit()
		}
		if err == nil {
			return nil
		}
		_ = tx.Rollback()
		if attempt == 5 || !t.db.IsRetryable(err) || ctx.Err() != nil {
			return err
		}
	}
}

// moveMarked copies the message marked with state to the history and
// deletes it.
func (t *Tx) moveMarked(ctx context.Context, id int64, state driver.MessageState) error {
	if t.db.D.FinishMoves {
		return nil // the mark moved it
	}
	if _, err := t.exec(ctx, "message_move", id, string(state)); err != nil {
		return fmt.Errorf("message_move: %w", err)
	}
	if _, err := t.exec(ctx, "message_delete_moved", id, string(state)); err != nil {
		return fmt.Errorf("message_delete_moved: %w", err)
	}
	return nil
}

// MessageFinish implements driver.QueueTx.
func (t *Tx) MessageFinish(ctx context.Context, c driver.Claim, state driver.MessageState, e *driver.AttemptError) (bool, error) {
	var text, doc any
	if e != nil {
		b, err := json.Marshal(e)
		if err != nil {
			return false, err
		}
		text, doc = e.Error, string(b)
	}
	if t.db.D.FinishMoves {
		return affected(t.exec(ctx, "message_mark", string(state), text, doc, c.ID, c.SessionID, c.Attempt))
	}
	var ok bool
	err := t.atomic(ctx, func(t *Tx) error {
		var err error
		ok, err = affected(t.exec(ctx, "message_mark", string(state), text, doc, c.ID, c.SessionID, c.Attempt))
		if err != nil || !ok {
			return err
		}
		return t.moveMarked(ctx, c.ID, state)
	})
	return ok, err
}

// MessageFinishMany implements driver.QueueTx: in one statement where the
// dialect has message_finish_many (PostgreSQL: DELETE ... RETURNING feeding
// the INSERT; SQLite: an UPDATE whose trigger moves the row), otherwise a
// copy and a delete in one transaction.
func (t *Tx) MessageFinishMany(ctx context.Context, sessionID string, claims []driver.Claim) (int, error) {
	if len(claims) == 0 {
		return 0, nil
	}
	if t.db.finishesInOne() {
		return t.execClaims(ctx, "message_finish_many", sessionID, claims)
	}
	var n int
	err := t.atomic(ctx, func(t *Tx) error {
		var err error
		if n, err = t.execClaims(ctx, "message_move_many", sessionID, claims); err != nil || n == 0 {
			return err
		}
		deleted, err := t.execClaims(ctx, "message_ack_many", sessionID, claims)
		if err == nil && deleted != n {
			err = fmt.Errorf("message_ack_many deleted %d of the %d messages moved to the history", deleted, n)
		}
		return err
	})
	return n, err
}

// MessageCancel implements driver.QueueTx.
func (t *Tx) MessageCancel(ctx context.Context, id int64) (driver.MessageState, error) {
	var state driver.MessageState
	err := t.atomic(ctx, func(t *Tx) error {
		moved, err := affected(t.exec(ctx, "message_mark_waiting", driver.MessageCancelled, id))
		if err != nil {
			return err
		}
		if moved {
			state = driver.MessageReady
			return t.moveMarked(ctx, id, driver.MessageCancelled)
		}
		flagged, err := affected(t.exec(ctx, "message_request_cancel", id))
		if err != nil || flagged {
			state = driver.MessageClaimed
			return err
		}
		m, found, err := t.MessageGet(ctx, id)
		if found {
			state = m.State
		}
		return err
	})
	return state, err
}

// MessageGet implements driver.QueueTx.
func (t *Tx) MessageGet(ctx context.Context, id int64) (driver.Message, bool, error) {
	m, err := ScanMessage(t.row(ctx, "message_get", id))
	if err == nil {
		return m, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return m, false, fmt.Errorf("message_get: %w", err)
	}
	m, err = scanFinished(t.row(ctx, "finished_get", id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("finished_get: %w", err)
	}
	return m, true, nil
}

// scanFinished reads one row of the history.
func scanFinished(sc Scanner) (driver.Message, error) {
	var m driver.Message
	var key []byte
	var meta, kind, errs sql.NullString
	var created, finished int64
	err := sc.Scan(&m.ID, &m.Queue, &m.Payload, &m.Priority, &key, &m.Attempt, &m.MaxAttempts, &m.LastError,
		&created, &finished, &meta, &m.State, &kind, &errs)
	if err != nil {
		return m, err
	}
	m.Key, m.HasKey = string(key), key != nil
	m.CreatedAt, m.FinishedAt = FromMicros(created), FromMicros(finished)
	m.Meta, m.Kind, m.Errors = meta.String, kind.String, errs.String
	return m, nil
}

// HistoryList implements driver.QueueTx.
func (t *Tx) HistoryList(ctx context.Context, queue string, state driver.MessageState, kind string, d driver.DataFilter, before int64, limit int) ([]driver.Message, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	args := t.db.withData([]any{queue, state, before, kind, limit}, d)
	rows, err := t.db.QueryNamed(ctx, t.Tx, "finished_list", args...)
	return scanMessagesWith("finished_list", rows, err, scanFinished)
}

// HistoryPrune implements driver.QueueTx.
func (t *Tx) HistoryPrune(ctx context.Context, state driver.MessageState, age time.Duration, limit int) (int, error) {
	res, err := t.exec(ctx, "finished_prune", state, us(age), limit)
	if err != nil {
		return 0, fmt.Errorf("finished_prune: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// ScheduleEnsure implements driver.QueueTx.
func (t *Tx) ScheduleEnsure(ctx context.Context, name string, lastTick int64) error {
	if _, err := t.exec(ctx, "schedule_ensure", name, lastTick); err != nil {
		return fmt.Errorf("schedule_ensure: %w", err)
	}
	return nil
}

// ScheduleLast implements driver.QueueTx.
func (t *Tx) ScheduleLast(ctx context.Context, name string) (int64, bool, error) {
	var last int64
	err := t.row(ctx, "schedule_last", name).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("schedule_last: %w", err)
	}
	return last, true, nil
}

// ScheduleAdvance implements driver.QueueTx.
func (t *Tx) ScheduleAdvance(ctx context.Context, name string, tick int64) (bool, error) {
	ok, err := affected(t.exec(ctx, "schedule_advance", tick, name, tick))
	if err != nil {
		return false, fmt.Errorf("schedule_advance: %w", err)
	}
	return ok, nil
}

// finishesInOne reports whether the dialect finishes claims in one
// statement: message_finish_many, in the list form or the JSON one
// (claimsStatement prefers the latter).
func (db *DB) finishesInOne() bool {
	_, list := db.D.Queries["message_finish_many"]
	_, json := db.D.Queries["message_finish_many_json"]
	return list || json
}
