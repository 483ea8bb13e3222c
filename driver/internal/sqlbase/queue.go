package sqlbase

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/driver"
)

func nullKey(hasKey bool, key string) any {
	if !hasKey {
		return nil
	}
	return key
}

// nullString is NULL for "".
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func messageArgs(m driver.NewMessage) []any {
	var meta any
	if m.Meta != "" {
		meta = m.Meta
	}
	return []any{m.Queue, m.Payload, m.Priority, nullKey(m.HasKey, m.Key), us(m.Delay), us(m.Delay), m.MaxAttempts, meta, nullString(m.Kind)}
}

// UniqueStatements implements driver.Driver.
func (db *DB) UniqueStatements(queue, key string, expiresAt int64) driver.UniqueStatements {
	return driver.UniqueStatements{
		Insert: driver.Statement{Query: db.Q("unique_insert"), Args: []any{queue, key, expiresAt}},
		Get:    driver.Statement{Query: db.Q("unique_get"), Args: []any{queue, key}},
		Set: func(id int64) driver.Statement {
			return driver.Statement{Query: db.Q("unique_set"), Args: []any{id, expiresAt, queue, key}}
		},
	}
}

// WaitingStatement implements driver.Driver.
func (db *DB) WaitingStatement(queue, kind string) (string, []any) {
	return db.Q("message_waiting_kind"), []any{queue, kind}
}

// EnqueueStatement implements driver.Driver.
func (db *DB) EnqueueStatement(m driver.NewMessage) (string, []any, bool) {
	return db.Q("message_insert"), messageArgs(m), db.D.InsertReturning
}

func affected(r sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := r.RowsAffected()
	return n > 0, err
}

func (t *Tx) count(ctx context.Context, name string, args ...any) (int64, error) {
	var n sql.NullInt64
	if err := t.row(ctx, name, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n.Int64, nil
}

func (t *Tx) ids(ctx context.Context, name string, args ...any) ([]int64, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, name, args...)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, ScanInt64)
}

// rowCount is how many rows a statement affected.
func rowCount(r sql.Result, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
}

// QueueRegister implements driver.QueueTx.
func (t *Tx) QueueRegister(ctx context.Context, name string) error {
	_, err := t.exec(ctx, "queue_register", name)
	return err
}

// QueueExists implements driver.QueueTx.
func (t *Tx) QueueExists(ctx context.Context, name string) (bool, error) {
	n, err := t.count(ctx, "queue_exists", name)
	return n > 0, err
}

// QueueList implements driver.QueueTx.
func (t *Tx) QueueList(ctx context.Context) ([]string, error) {
	return t.strings(ctx, "queue_list")
}

// QueueLock implements driver.QueueTx.
func (t *Tx) QueueLock(ctx context.Context, name string) error {
	var s string
	err := t.row(ctx, "queue_lock", name).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}

// UniqueReserve implements driver.QueueTx.
func (t *Tx) UniqueReserve(ctx context.Context, queue, key string, expiresAt int64, states []string) (int64, bool, error) {
	res, err := t.exec(ctx, "unique_insert", queue, key, expiresAt)
	if err != nil {
		return 0, false, fmt.Errorf("unique_insert: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, false, err
	} else if n == 1 {
		return 0, true, nil // a new key (MySQL counts an insert as 1, a no-op update as 0)
	}
	var holder int64
	var period, over int
	var state string
	if err := t.row(ctx, "unique_get", queue, key).Scan(&holder, &period, &over, &state); err != nil {
		return 0, false, fmt.Errorf("unique_get: %w", err)
	}
	if driver.UniqueHolds(period == 1, over == 1, state, states) {
		return holder, false, nil
	}
	return 0, true, nil // over: the new message takes the key over
}

// UniqueSet implements driver.QueueTx.
func (t *Tx) UniqueSet(ctx context.Context, queue, key string, id, expiresAt int64) error {
	_, err := t.exec(ctx, "unique_set", id, expiresAt, queue, key)
	return err
}

// MessageRetryNow implements driver.QueueTx: a waiting message becomes
// due now; one not in the queue but in its history (dead, completed,
// cancelled) moves back under its id (finished_retry_now).
func (t *Tx) MessageRetryNow(ctx context.Context, queue string, id int64) (bool, driver.MessageState, error) {
	done, state, err := t.onWaiting(ctx, "message_retry_now", queue, id)
	if err != nil || done || state != "" {
		return done, state, err
	}
	done, err = t.retryFinished(ctx, queue, id)
	return done, "", err
}

// retryFinished moves a message of queue in the history back to it under
// its id, ready now; false when the history has no such message.
func (t *Tx) retryFinished(ctx context.Context, queue string, id int64) (bool, error) {
	n, err := rowCount(t.exec(ctx, "finished_retry_now", id, queue))
	if err != nil || n == 0 {
		return false, err
	}
	if _, err := t.exec(ctx, "finished_delete_retried", id, queue); err != nil {
		return false, fmt.Errorf("finished_delete_retried: %w", err)
	}
	return true, nil
}

// MessageDelete implements driver.QueueTx: a waiting message, or else one
// in the history (finished_delete_retried deletes it by id).
func (t *Tx) MessageDelete(ctx context.Context, queue string, id int64) (bool, driver.MessageState, error) {
	done, state, err := t.onWaiting(ctx, "message_delete_waiting", queue, id)
	if err != nil || done || state != "" {
		return done, state, err
	}
	done, err = affected(t.exec(ctx, "finished_delete_retried", id, queue))
	return done, "", err
}

// onWaiting runs a statement on one waiting message; when it changed
// nothing, it says the message's state.
func (t *Tx) onWaiting(ctx context.Context, name, queue string, id int64) (bool, driver.MessageState, error) {
	res, err := t.exec(ctx, name, id, queue)
	if err != nil {
		return false, "", fmt.Errorf("%s: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return n > 0, "", err
	}
	var state driver.MessageState
	err = t.row(ctx, "message_state", id, queue).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return false, "", nil
	}
	return false, state, err
}

// QueuePause implements driver.QueueTx.
func (t *Tx) QueuePause(ctx context.Context, name string, paused bool) (bool, error) {
	v := 0
	if paused {
		v = 1
	}
	res, err := t.exec(ctx, "queue_pause", v, name)
	if err != nil {
		return false, fmt.Errorf("queue_pause: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return n > 0, err
	}
	// MySQL counts only changed rows: a queue already in that state.
	_, found, err := t.queuePaused(ctx, name)
	return found, err
}

// QueuePaused implements driver.QueueTx.
func (t *Tx) QueuePaused(ctx context.Context, name string) (bool, error) {
	paused, _, err := t.queuePaused(ctx, name)
	return paused, err
}

// queuePaused reads whether queue name is paused, and whether it exists.
func (t *Tx) queuePaused(ctx context.Context, name string) (paused, found bool, err error) {
	var cur int
	err = t.row(ctx, "queue_paused", name).Scan(&cur)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("queue_paused: %w", err)
	}
	return cur != 0, true, nil
}

// UniquePurge implements driver.QueueTx.
func (t *Tx) UniquePurge(ctx context.Context) (int, error) {
	return rowCount(t.exec(ctx, "unique_purge"))
}

// MessageInsert implements driver.QueueTx.
func (t *Tx) MessageInsert(ctx context.Context, m driver.NewMessage) (int64, error) {
	if t.db.D.InsertReturning {
		var id int64
		if err := t.row(ctx, "message_insert", messageArgs(m)...).Scan(&id); err != nil {
			return 0, fmt.Errorf("message_insert: %w", err)
		}
		return id, nil
	}
	res, err := t.exec(ctx, "message_insert", messageArgs(m)...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// MessageInsertMany implements driver.QueueTx: one statement of arrays
// where the dialect has message_insert_many, one insert per message
// otherwise.
func (t *Tx) MessageInsertMany(ctx context.Context, queue string, ms []driver.NewMessage) ([]int64, error) {
	ids := make([]int64, 0, len(ms))
	name, args, err := t.insertManyStatement(queue, ms)
	if err != nil {
		return nil, err
	}
	if name == "" || len(ms) == 1 {
		for _, m := range ms {
			id, err := t.MessageInsert(ctx, m)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	ids, err = t.ids(ctx, name, args...)
	if err != nil {
		return nil, err
	}
	if len(ids) != len(ms) {
		return nil, fmt.Errorf("%s: %d ids for %d messages", name, len(ids), len(ms))
	}
	slices.Sort(ids) // inserted in order: the ids rise in the messages' order
	return ids, nil
}

// insertManyStatement is the dialect's one-statement insert of a batch and
// its arguments: message_insert_many takes arrays (PostgreSQL),
// message_insert_json one JSON array of rows (SQLite); "" when the dialect
// has neither.
func (t *Tx) insertManyStatement(queue string, ms []driver.NewMessage) (string, []any, error) {
	if _, ok := t.db.D.Queries["message_insert_many"]; ok {
		return "message_insert_many", manyArgs(queue, ms), nil
	}
	if _, ok := t.db.D.Queries["message_insert_json"]; ok {
		doc, err := jsonRows(ms)
		return "message_insert_json", []any{doc, queue}, err
	}
	return "", nil, nil
}

// jsonRow is one message of message_insert_json's array.
type jsonRow struct {
	Payload     string  `json:"p"` // hex
	Priority    int     `json:"r"`
	Key         *string `json:"k"`
	Delay       int64   `json:"d"` // microseconds
	MaxAttempts int     `json:"a"`
	Meta        *string `json:"m"`
	Kind        *string `json:"n"`
}

// jsonRows is message_insert_json's argument: the messages as a JSON
// array, payloads in hex.
func jsonRows(ms []driver.NewMessage) (string, error) {
	rows := make([]jsonRow, len(ms))
	for i := range ms {
		m := &ms[i]
		rows[i] = jsonRow{Payload: hex.EncodeToString(m.Payload), Priority: m.Priority, Delay: us(m.Delay), MaxAttempts: m.MaxAttempts}
		if m.HasKey {
			rows[i].Key = &m.Key
		}
		if m.Meta != "" {
			rows[i].Meta = &m.Meta
		}
		if m.Kind != "" {
			rows[i].Kind = &m.Kind
		}
	}
	b, err := json.Marshal(rows)
	return string(b), err
}

// manyArgs are message_insert_many's arrays, one element per message.
func manyArgs(queue string, ms []driver.NewMessage) []any {
	payloads := make([][]byte, len(ms))
	prios, attempts := make([]int32, len(ms)), make([]int32, len(ms))
	keys, metas, kinds := make([]string, len(ms)), make([]*string, len(ms)), make([]*string, len(ms))
	hasKey := make([]bool, len(ms))
	delays := make([]int64, len(ms))
	for i := range ms {
		m := &ms[i]
		payloads[i], prios[i], attempts[i] = m.Payload, int32(m.Priority), int32(m.MaxAttempts)
		keys[i], hasKey[i], delays[i] = m.Key, m.HasKey, us(m.Delay)
		if m.Meta != "" {
			metas[i] = &m.Meta
		}
		if m.Kind != "" {
			kinds[i] = &m.Kind
		}
	}
	return []any{payloads, prios, keys, hasKey, delays, attempts, metas, queue, kinds}
}

// ClaimCandidates implements driver.QueueTx.
func (t *Tx) ClaimCandidates(ctx context.Context, queue, kind string, limit int) ([]int64, error) {
	return t.ids(ctx, "claim_candidates", queue, kind, limit)
}

// ClaimCandidatesPerKey implements driver.QueueTx.
func (t *Tx) ClaimCandidatesPerKey(ctx context.Context, queue string, limit int) ([]int64, error) {
	return t.ids(ctx, "claim_candidates_per_key", queue, limit)
}

// ClaimInFlight implements driver.QueueTx.
func (t *Tx) ClaimInFlight(ctx context.Context, queue string) (int, error) {
	n, err := t.count(ctx, "claim_in_flight", queue)
	return int(n), err
}

// ClaimHeads implements driver.QueueTx.
func (t *Tx) ClaimHeads(ctx context.Context, queue string, limit int) ([]int64, []time.Duration, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "claim_head", queue, limit)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []int64
	var due []time.Duration
	for rows.Next() {
		var id, dueIn int64
		if err := rows.Scan(&id, &dueIn); err != nil {
			return nil, nil, err
		}
		ids = append(ids, id)
		due = append(due, time.Duration(dueIn)*time.Microsecond)
	}
	return ids, due, rows.Err()
}

// ClaimIDs implements driver.QueueTx.
func (t *Tx) ClaimIDs(ctx context.Context, sessionID string, mode int, lease time.Duration, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	name := "claim_ids"
	if _, has := t.db.D.Queries["claim_ids_parallel"]; has && mode == 0 {
		name = "claim_ids_parallel" // refuses a limited queue (MySQL)
	}
	q := expandList(t.db.Q(name), t.db.D.Numbered, 4, len(ids))
	args := append([]any{sessionID, mode, us(lease)}, int64Args(ids)...)
	res, err := t.q().ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("claim_ids: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// MessageCols is the column list of message queries, in ScanMessage order.
const MessageCols = "id, queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, claimed_by, claim_mode, claim_until, last_error, created_at, meta, kind, errors, cancel"

// ScanMessage reads one message row.
func ScanMessage(sc Scanner) (driver.Message, error) {
	var m driver.Message
	var key []byte
	var claimedBy, meta, kind, errs sql.NullString
	var mode, until sql.NullInt64
	var runAt, orderAt, created int64
	var cancel int
	var state string // see ScanRequest
	err := sc.Scan(&m.ID, &m.Queue, &m.Payload, &m.Priority, &key, &runAt, &orderAt, &m.Attempt, &m.MaxAttempts,
		&state, &claimedBy, &mode, &until, &m.LastError, &created, &meta, &kind, &errs, &cancel)
	if err != nil {
		return m, err
	}
	m.State = driver.MessageState(state)
	m.Key, m.HasKey = string(key), key != nil
	m.RunAt, m.OrderAt, m.CreatedAt = FromMicros(runAt), FromMicros(orderAt), FromMicros(created)
	m.ClaimedBy, m.ClaimMode, m.Meta = claimedBy.String, int(mode.Int64), meta.String
	m.Kind, m.Errors, m.CancelRequested = kind.String, errs.String, cancel != 0
	if until.Valid {
		m.ClaimUntil = FromMicros(until.Int64)
	}
	return m, nil
}

// MessageByIDs implements driver.QueueTx.
func (t *Tx) MessageByIDs(ctx context.Context, ids []int64) ([]driver.Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q := expandList(t.db.Q("message_by_ids"), t.db.D.Numbered, 1, len(ids))
	rows, err := t.q().QueryContext(ctx, q, int64Args(ids)...)
	return scanMessages("message_by_ids", rows, err)
}

// scanMessages reads the message rows of the query name.
func scanMessages(name string, rows *sql.Rows, err error) ([]driver.Message, error) {
	return scanMessagesWith(name, rows, err, ScanMessage)
}

// scanMessagesWith reads the rows of the query name with scan; errors
// other than the rows' own name the query.
func scanMessagesWith(name string, rows *sql.Rows, err error, scan func(Scanner) (driver.Message, error)) ([]driver.Message, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return ScanAll(rows, func(sc Scanner) (driver.Message, error) {
		m, err := scan(sc)
		if err != nil {
			return m, fmt.Errorf("%s: %w", name, err)
		}
		return m, nil
	})
}

// MessageList implements driver.QueueTx.
func (t *Tx) MessageList(ctx context.Context, f driver.ListFilter) ([]driver.Message, error) {
	due, retried := tristate(f.Due), tristate(f.Retried)
	if retried != 0 {
		retried = 3 - retried // 1: never retried, 2: retried
	}
	if due == 2 {
		return t.listWaiting(ctx, f, retried)
	}
	after := f.After
	if after == (driver.ListPos{}) {
		after = driver.ListPos{Priority: math.MinInt32, OrderAt: math.MinInt64}
	}
	args := []any{f.Queue, f.State, after.Priority, after.OrderAt, after.ID, due, retried, f.Kind, f.Limit}
	if !t.db.D.Numbered {
		args = []any{f.Queue, f.State, after.Priority, after.OrderAt, after.ID, due, due, due, retried, retried, retried,
			f.Kind, f.Kind, f.Limit}
	}
	args = t.db.withData(args, f.DataFilter)
	rows, err := t.db.QueryNamed(ctx, t.Tx, "message_list", args...)
	return scanMessages("message_list", rows, err)
}

// listWaiting lists messages not yet due along the due index; the
// position's OrderAt is a run_at there.
func (t *Tx) listWaiting(ctx context.Context, f driver.ListFilter, retried int) ([]driver.Message, error) {
	args := []any{f.Queue, f.After.OrderAt, f.After.ID, retried, f.Kind, f.Limit}
	if !t.db.D.Numbered {
		args = []any{f.Queue, f.After.OrderAt, f.After.ID, retried, retried, retried, f.Kind, f.Kind, f.Limit}
	}
	args = t.db.withData(args, f.DataFilter)
	rows, err := t.db.QueryNamed(ctx, t.Tx, "message_list_waiting", args...)
	return scanMessages("message_list_waiting", rows, err)
}

// tristate is 1 for true, 2 for false and 0 for nil.
func tristate(b *bool) int {
	switch {
	case b == nil:
		return 0
	case *b:
		return 1
	}
	return 2
}

// QueueNextDue implements driver.QueueTx.
func (t *Tx) QueueNextDue(ctx context.Context, queue string) (time.Duration, bool, error) {
	var d sql.NullInt64
	if err := t.row(ctx, "queue_next_due", queue).Scan(&d); err != nil {
		return 0, false, fmt.Errorf("queue_next_due: %w", err)
	}
	if !d.Valid {
		return 0, false, nil
	}
	return time.Duration(max(d.Int64, 0)) * time.Microsecond, true, nil
}

// MessageAck implements driver.QueueTx.
func (t *Tx) MessageAck(ctx context.Context, c driver.Claim) (bool, error) {
	return affected(t.exec(ctx, "message_ack", c.ID, c.SessionID, c.Attempt))
}

// MessageRetry implements driver.QueueTx.
func (t *Tx) MessageRetry(ctx context.Context, c driver.Claim, delay time.Duration, moveBack bool, e driver.AttemptError) (bool, error) {
	back, doc, err := giveBackArgs(moveBack, e)
	if err != nil {
		return false, err
	}
	return affected(t.exec(ctx, "message_retry", back, us(delay), us(delay), e.Error, doc, c.ID, c.SessionID, c.Attempt))
}

// giveBackArgs are the arguments of a claim given back for later
// (message_retry, message_snooze): 1 to move it to the back of its queue,
// and the record of its run as a JSON object.
func giveBackArgs(moveBack bool, e driver.AttemptError) (back int, doc string, err error) {
	if moveBack {
		back = 1
	}
	b, err := json.Marshal(e)
	return back, string(b), err
}

// MessageSnooze implements driver.QueueTx.
func (t *Tx) MessageSnooze(ctx context.Context, c driver.Claim, delay time.Duration, moveBack bool, e driver.AttemptError) (bool, error) {
	back, doc, err := giveBackArgs(moveBack, e)
	if err != nil {
		return false, err
	}
	return affected(t.exec(ctx, "message_snooze", back, us(delay), us(delay), doc, c.ID, c.SessionID, c.Attempt))
}

// MessageExtend implements driver.QueueTx.
func (t *Tx) MessageExtend(ctx context.Context, c driver.Claim, d time.Duration) (bool, error) {
	return affected(t.exec(ctx, "message_extend", us(d), c.ID, c.SessionID, c.Attempt))
}

// MessageStart implements driver.QueueTx.
func (t *Tx) MessageStart(ctx context.Context, c driver.Claim, mode int, d time.Duration) (bool, error) {
	return affected(t.exec(ctx, "message_start", mode, us(d), c.ID, c.SessionID, c.Attempt))
}

// MessageRelease implements driver.QueueTx.
func (t *Tx) MessageRelease(ctx context.Context, c driver.Claim) (bool, error) {
	return affected(t.exec(ctx, "message_release", c.ID, c.SessionID, c.Attempt))
}

// QueueRegisterStatement returns the statement registering a queue.
func (db *DB) QueueRegisterStatement(name string) (string, []any) {
	return db.Q("queue_register"), []any{name}
}

func (t *Tx) claimRefs(ctx context.Context, name string, args ...any) ([]driver.ClaimRef, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, name, args...)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, func(sc Scanner) (driver.ClaimRef, error) {
		var r driver.ClaimRef
		var mode sql.NullInt64
		err := sc.Scan(&r.ID, &r.SessionID, &r.Attempt, &r.MaxAttempts, &mode)
		r.Mode = int(mode.Int64)
		return r, err
	})
}

// ClaimsStale implements driver.QueueTx.
func (t *Tx) ClaimsStale(ctx context.Context, limit int) ([]driver.ClaimRef, error) {
	return t.claimRefs(ctx, "claims_stale", limit)
}

// ClaimsBySession implements driver.QueueTx.
func (t *Tx) ClaimsBySession(ctx context.Context, sessionID string) ([]driver.ClaimRef, error) {
	return t.claimRefs(ctx, "claims_by_session", sessionID)
}

// DeadList implements driver.QueueTx.
func (t *Tx) DeadList(ctx context.Context, queue string, limit int) ([]driver.DeadLetter, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "dead_list", queue, limit)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, scanDead)
}

// scanDead reads one row of dead_list.
func scanDead(sc Scanner) (driver.DeadLetter, error) {
	var d driver.DeadLetter
	var key []byte
	var created, failed int64
	var meta sql.NullString
	if err := sc.Scan(&d.ID, &d.Queue, &d.Payload, &d.Priority, &key, &d.Attempt, &d.MaxAttempts,
		&d.LastError, &created, &failed, &meta); err != nil {
		return d, err
	}
	d.Meta = meta.String
	d.Key, d.HasKey = string(key), key != nil
	d.CreatedAt, d.FailedAt = FromMicros(created), FromMicros(failed)
	return d, nil
}

// DeadRedrive implements driver.QueueTx.
func (t *Tx) DeadRedrive(ctx context.Context, queue string) (int, error) {
	ids, err := t.ids(ctx, "dead_ids", queue)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	q := expandList(t.db.Q("dead_redrive_ids"), t.db.D.Numbered, 1, len(ids))
	if _, err := t.q().ExecContext(ctx, q, int64Args(ids)...); err != nil {
		return 0, fmt.Errorf("dead_redrive_ids: %w", err)
	}
	q = expandList(t.db.Q("dead_delete_ids"), t.db.D.Numbered, 1, len(ids))
	if _, err := t.q().ExecContext(ctx, q, int64Args(ids)...); err != nil {
		return 0, fmt.Errorf("dead_delete_ids: %w", err)
	}
	return len(ids), nil
}

// DeadRedriveAll implements driver.CallerQueueTx: three statements, each
// on the queue's marked dead letters (dead_mark_redrive).
func (t *Tx) DeadRedriveAll(ctx context.Context, queue string) (int, error) {
	n, err := rowCount(t.exec(ctx, "dead_mark_redrive", queue))
	if err != nil || n == 0 {
		return 0, err
	}
	if _, err := t.exec(ctx, "dead_redrive_marked", queue); err != nil {
		return 0, err
	}
	deleted, err := rowCount(t.exec(ctx, "dead_delete_marked", queue))
	if err == nil && deleted != n {
		err = fmt.Errorf("dead_delete_marked deleted %d of the %d dead letters marked", deleted, n)
	}
	return n, err
}

// QueueDeleteMessages implements driver.QueueTx.
func (t *Tx) QueueDeleteMessages(ctx context.Context, queue string) (int, error) {
	return rowCount(t.exec(ctx, "queue_delete_messages", queue))
}

// DeadPurge implements driver.QueueTx.
func (t *Tx) DeadPurge(ctx context.Context, queue string) (int, error) {
	return rowCount(t.exec(ctx, "dead_purge", queue))
}

// QueueStats implements driver.QueueTx.
func (t *Tx) QueueStats(ctx context.Context, queue string) (driver.QueueStats, error) {
	var s driver.QueueStats
	var stateR, oldest int64
	args := []any{queue, StatsLimit}
	if !t.db.D.Numbered {
		args = []any{queue, StatsLimit, queue, StatsLimit, queue, StatsLimit, queue, StatsLimit, queue, queue, queue, StatsLimit}
	}
	var paused int
	var limits sql.NullString
	if err := t.row(ctx, "queue_stats", args...).Scan(&stateR, &s.Ready, &s.Retrying, &oldest,
		&s.Claimed, &s.Dead, &s.Completed, &s.Cancelled, &paused, &limits); err != nil {
		return s, fmt.Errorf("queue_stats: %w", err)
	}
	s.Paused, s.Limits = paused != 0, limits.String
	s.Scheduled = stateR - s.Ready - s.Retrying
	s.OldestReady = time.Duration(max(oldest, 0)) * time.Microsecond
	// Over the limit: the planner's estimate (PostgreSQL, MySQL) or an
	// exact count (SQLite) of the state; ready, retrying and scheduled are
	// split in the proportion of the first entries, in claim order.
	if stateR >= StatsLimit {
		total, err := t.estimate(ctx, "queue_estimate_r", queue)
		if err != nil {
			return s, err
		}
		total = max(total, stateR)
		s.Ready = total * s.Ready / stateR
		s.Retrying = total * s.Retrying / stateR
		s.Scheduled, s.Estimated = total-s.Ready-s.Retrying, true
	}
	for _, e := range []struct {
		q string
		n *int64
	}{{"queue_estimate_claimed", &s.Claimed}, {"queue_estimate_dead", &s.Dead},
		{"queue_estimate_completed", &s.Completed}, {"queue_estimate_cancelled", &s.Cancelled}} {
		if *e.n < StatsLimit {
			continue
		}
		n, err := t.estimate(ctx, e.q, queue)
		if err != nil {
			return s, err
		}
		*e.n, s.Estimated = max(n, StatsLimit), true
	}
	var into int64
	if err := t.row(ctx, "throughput_recent", queue).Scan(&s.RecentAcked, &s.RecentDead, &into); err != nil {
		return s, fmt.Errorf("throughput_recent: %w", err)
	}
	s.Window = 5*time.Minute + time.Duration(into)*time.Microsecond
	return s, nil
}

// StatsLimit is how many entries of one state QueueStats reads at most;
// beyond it, counts are estimates.
const StatsLimit = 10000

// estimate runs a queue_estimate_* query: a count, or a plan in JSON whose
// first row estimate ("Plan Rows" on PostgreSQL, "rows" on MySQL) it reads.
func (t *Tx) estimate(ctx context.Context, name, queue string) (int64, error) {
	var out string
	if err := t.row(ctx, name, queue).Scan(&out); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if n, err := strconv.ParseInt(out, 10, 64); err == nil {
		return n, nil
	}
	var plan any
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if n, ok := planRows(plan); ok {
		return int64(n), nil
	}
	return 0, fmt.Errorf("%s: no row estimate in the plan", name)
}

// planRows finds the first row estimate in a JSON plan.
func planRows(v any) (float64, bool) {
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			if n, ok := planRows(x); ok {
				return n, true
			}
		}
	case map[string]any:
		for _, k := range []string{"Plan Rows", "rows", "rows_examined_per_scan"} {
			if n, ok := v[k].(float64); ok {
				return n, true
			}
		}
		for _, k := range []string{"Plan", "query_block", "table", "nested_loop"} {
			if x, ok := v[k]; ok {
				if n, ok := planRows(x); ok {
					return n, true
				}
			}
		}
	}
	return 0, false
}

// ThroughputAdd implements driver.QueueTx.
func (t *Tx) ThroughputAdd(ctx context.Context, queue string, c driver.Throughput) error {
	args := make([]any, 0, 4+driver.DurationBuckets)
	args = append(args, queue, c.Acked, c.Retried, c.Dead)
	for _, n := range c.Durations {
		args = append(args, n)
	}
	_, err := t.exec(ctx, "throughput_add", args...)
	return err
}

// ThroughputPurge implements driver.QueueTx.
func (t *Tx) ThroughputPurge(ctx context.Context) error {
	_, err := t.exec(ctx, "throughput_purge")
	return err
}

// ClaimParallel claims up to limit ready messages in one statement
// (claim_parallel) when the dialect has it; ok is false otherwise.
func (t *Tx) ClaimParallel(ctx context.Context, queue, kind, sessionID string, lease time.Duration, limit int) ([]driver.Message, bool, error) {
	if _, has := t.db.D.Queries["claim_parallel"]; !has {
		return nil, false, nil
	}
	rows, err := t.db.QueryNamed(ctx, t.Tx, "claim_parallel", sessionID, int(0), us(lease), queue, limit, kind)
	if err != nil {
		return nil, true, err
	}
	defer rows.Close()
	// Sized for the claim: a message is a large value, and growing the
	// slice by doubling copied a thousand-message claim ten times.
	out := make([]driver.Message, 0, min(limit, 4096))
	for rows.Next() {
		m, err := ScanMessage(rows)
		if err != nil {
			return nil, true, err
		}
		out = append(out, m)
	}
	return out, true, rows.Err()
}

// MessageAckMany implements driver.QueueTx in one statement.
func (t *Tx) MessageAckMany(ctx context.Context, sessionID string, claims []driver.Claim) (int, error) {
	if len(claims) == 0 {
		return 0, nil
	}
	return t.execClaims(ctx, "message_ack_many", sessionID, claims)
}

// execClaims runs a query over claims of one session (see claimsStatement)
// and returns the rows affected.
func (t *Tx) execClaims(ctx context.Context, name, sessionID string, claims []driver.Claim) (int, error) {
	st := t.db.claimsStatement(name, sessionID, claims)
	var res sql.Result
	var err error
	if _, ok := t.db.D.Queries[name+"_json"]; ok {
		res, err = t.exec(ctx, name+"_json", st.Args...) // prepared: one text whatever the claims
	} else {
		res, err = t.q().ExecContext(ctx, st.Query, st.Args...)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// claimsStatement is a query over claims of one session: {ids} becomes the
// list of their ids and {pairs} (or {pairs2}) the (id, attempt) pairs;
// where the dialect has the query's JSON form (name_json), the claims are
// one JSON array of [id, attempt] pairs instead, so that its text is the
// same whatever their number (prepared once).
func (db *DB) claimsStatement(name, sessionID string, claims []driver.Claim) driver.Statement {
	if _, ok := db.D.Queries[name+"_json"]; ok {
		var doc strings.Builder
		doc.WriteByte('[')
		for i, c := range claims {
			if i > 0 {
				doc.WriteByte(',')
			}
			fmt.Fprintf(&doc, "[%d,%d]", c.ID, c.Attempt)
		}
		doc.WriteByte(']')
		return driver.Statement{Query: db.Q(name + "_json"), Args: []any{sessionID, doc.String()}}
	}
	q := db.Q(name)
	var ids, pairs strings.Builder
	args := []any{sessionID}
	for i, c := range claims {
		if i > 0 {
			ids.WriteByte(',')
		}
		if db.D.Numbered {
			fmt.Fprintf(&ids, "$%d", len(args)+1)
		} else {
			ids.WriteByte('?')
		}
		args = append(args, c.ID)
	}
	for i, c := range claims {
		if i > 0 {
			pairs.WriteByte(',')
		}
		if db.D.Numbered {
			fmt.Fprintf(&pairs, "($%d, $%d)", len(args)+1, len(args)+2)
		} else {
			pairs.WriteString("(?, ?)")
		}
		args = append(args, c.ID, c.Attempt)
	}
	q = strings.Replace(q, "{ids}", ids.String(), 1)
	q = strings.Replace(strings.Replace(q, "{pairs2}", pairs.String(), 1), "{pairs}", pairs.String(), 1)
	return driver.Statement{Query: q, Args: args}
}

// CompleteStatements implements driver.Driver.
func (db *DB) CompleteStatements(c driver.Claim, keep bool) []driver.Statement {
	claims := []driver.Claim{c}
	switch one := db.finishesInOne(); {
	case !keep:
		return []driver.Statement{db.claimsStatement("message_ack_many", c.SessionID, claims)}
	case one:
		return []driver.Statement{db.claimsStatement("message_finish_many", c.SessionID, claims)}
	}
	return []driver.Statement{db.claimsStatement("message_move_many", c.SessionID, claims),
		db.claimsStatement("message_ack_many", c.SessionID, claims)}
}

// MessageInsertUnique implements driver.Queue in one statement
// (message_insert_unique): no row, or id 0, when the key exists and
// nothing was done.
func (db *DB) MessageInsertUnique(ctx context.Context, m driver.NewMessage) (int64, bool, error) {
	args := append(messageArgs(m), m.UniqueKey, m.UniqueExpires)
	var id int64
	err := db.RowNamed(ctx, nil, "message_insert_unique", args...).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("message_insert_unique: %w", err)
	}
	return id, id != 0, nil
}

// CallerQueueTx implements driver.Driver: the queue control statements in
// the program's own transaction.
func (db *DB) CallerQueueTx(c driver.CallerStatements) driver.CallerQueueTx {
	return &Tx{db: db, caller: c}
}

// callerRow is a row read in the program's own transaction (Tx.caller).
type callerRow struct {
	ctx  context.Context
	c    driver.CallerStatements
	q    string
	args []any
}

func (r callerRow) Scan(dest ...any) error { return r.c.ScanRow(r.ctx, r.q, r.args, dest...) }

// QueuesReady implements driver.Driver.
func (db *DB) QueuesReady(ctx context.Context, queues []string) ([]string, error) {
	if len(queues) == 0 {
		return nil, nil
	}
	q := expandList(db.Q("queues_ready"), db.D.Numbered, 1, len(queues))
	rows, err := (&Tx{db: db}).listed(ctx, q, len(queues)).QueryContext(ctx, q, StringArgs(queues)...)
	return ScanNames("queues_ready", rows, err)
}
