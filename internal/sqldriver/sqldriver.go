package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
)

// Dialect is what a backend supplies to the shared implementation.
type Dialect struct {
	// Name is the backend's short name.
	Name string
	// Numbered is true for $1-style bind variables (PostgreSQL).
	Numbered bool
	// InsertReturning is true when INSERT ... RETURNING id is supported;
	// otherwise Result.LastInsertId is used.
	InsertReturning bool
	// UpdateReturning is true when UPDATE ... RETURNING is supported;
	// otherwise ident_release is executed and ident_waiting read after it.
	UpdateReturning bool
	// Queries are the named queries of the dialect's query file.
	Queries map[string]string
	// TxOptions are used for every transaction.
	TxOptions *sql.TxOptions
	// Wake is called inside a transaction to wake clients once it commits.
	Wake func(ctx context.Context, t *Tx, clientIDs []string) error
	// IsRetryable reports whether a transaction failed only because of a
	// transient conflict inside the database (deadlock, serialization,
	// busy) and can be run again.
	IsRetryable func(error) bool
}

// DB is a backend built on database/sql. Backends embed it and add what is
// theirs (listening, migration locking, faster paths).
type DB struct {
	SQL *sql.DB
	D   *Dialect
}

// Q returns a named query, or panics: a missing query is a programming error
// caught by every test run.
func (db *DB) Q(name string) string {
	q, ok := db.D.Queries[name]
	if !ok {
		panic(fmt.Sprintf("baton/%s: query %q missing", db.D.Name, name))
	}
	return q
}

// Name implements driver.Driver.
func (db *DB) Name() string { return db.D.Name }

// Close implements driver.Driver.
func (db *DB) Close() error { return db.SQL.Close() }

// Begin implements driver.Driver.
func (db *DB) Begin(ctx context.Context) (driver.Tx, error) { return db.BeginTx(ctx) }

// BeginTx starts a transaction and returns the concrete type.
func (db *DB) BeginTx(ctx context.Context) (*Tx, error) {
	tx, err := db.SQL.BeginTx(ctx, db.D.TxOptions)
	if err != nil {
		return nil, err
	}
	return &Tx{Tx: tx, db: db}, nil
}

// Tx implements driver.Tx.
type Tx struct {
	Tx    *sql.Tx
	db    *DB
	after []func()
}

// AfterCommit registers f to run after a successful commit.
func (t *Tx) AfterCommit(f func()) { t.after = append(t.after, f) }

// Commit implements driver.Tx.
func (t *Tx) Commit() error {
	if err := t.Tx.Commit(); err != nil {
		return err
	}
	for _, f := range t.after {
		f()
	}
	return nil
}

// Rollback implements driver.Tx.
func (t *Tx) Rollback() error { return t.Tx.Rollback() }

func (t *Tx) exec(ctx context.Context, name string, args ...any) (sql.Result, error) {
	r, err := t.Tx.ExecContext(ctx, t.db.Q(name), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

func b(s string) []byte { return []byte(s) }

func us(d time.Duration) int64 { return d.Microseconds() }

// FromMicros converts stored microseconds to a time.
func FromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v)
}

// SessionInsert implements driver.Tx.
func (t *Tx) SessionInsert(ctx context.Context, s driver.Session, lease time.Duration) error {
	_, err := t.exec(ctx, "session_insert", s.ID, s.ClientID, s.Host, s.PID, s.Name, us(lease))
	return err
}

// SessionRenew implements driver.Tx.
func (t *Tx) SessionRenew(ctx context.Context, clientID string, lease time.Duration) (int, error) {
	r, err := t.exec(ctx, "session_renew", us(lease), clientID)
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
}

// SessionListByClient implements driver.Tx.
func (t *Tx) SessionListByClient(ctx context.Context, clientID string) ([]string, error) {
	return t.strings(ctx, "session_list_by_client", clientID)
}

// SessionDelete implements driver.Tx.
func (t *Tx) SessionDelete(ctx context.Context, id string) error {
	_, err := t.exec(ctx, "session_delete", id)
	return err
}

// SessionListExpired implements driver.Tx.
func (t *Tx) SessionListExpired(ctx context.Context, limit int) ([]string, error) {
	return t.strings(ctx, "session_list_expired", limit)
}

func (t *Tx) strings(ctx context.Context, name string, args ...any) ([]string, error) {
	rows, err := t.Tx.QueryContext(ctx, t.db.Q(name), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// LockIdentLock implements driver.Tx.
func (t *Tx) LockIdentLock(ctx context.Context, ids []driver.Ident) ([]driver.IdentState, error) {
	out := make([]driver.IdentState, 0, len(ids))
	for _, id := range ids {
		if _, err := t.exec(ctx, "ident_ensure", id.Kind, b(id.NS), b(id.Name)); err != nil {
			return nil, err
		}
		st := driver.IdentState{Ident: id}
		err := t.Tx.QueryRowContext(ctx, t.db.Q("ident_lock"), id.Kind, b(id.NS), b(id.Name)).
			Scan(&st.Fence, &st.Readers, &st.Writers, &st.Waiting)
		if err != nil {
			return nil, fmt.Errorf("ident_lock: %w", err)
		}
		out = append(out, st)
	}
	return out, nil
}

// LockIdentUpdate implements driver.Tx.
func (t *Tx) LockIdentUpdate(ctx context.Context, st driver.IdentState) error {
	_, err := t.exec(ctx, "ident_update", st.Fence, st.Readers, st.Writers, st.Waiting, st.Kind, b(st.NS), b(st.Name))
	return err
}

// LockIdentPurgeIdle implements driver.Tx.
func (t *Tx) LockIdentPurgeIdle(ctx context.Context) (int, error) {
	r, err := t.exec(ctx, "ident_purge_idle")
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
}

// RequestCols is the column list every request query selects, in the order
// ScanRequest reads them.
const RequestCols = "id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at"

// ScanRequest reads one request row (RequestCols) plus extra destinations.
func ScanRequest(sc interface{ Scan(...any) error }, extra ...any) (driver.Request, error) {
	var r driver.Request
	var ns, name []byte
	var created int64
	var granted sql.NullInt64
	dest := append([]any{&r.ID, &r.SessionID, &r.ClientID, &r.Kind, &ns, &name, &r.Mode, &r.Status, &r.CallID, &r.Token, &created, &granted}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return r, err
	}
	r.NS, r.Name = string(ns), string(name)
	r.CreatedAt = FromMicros(created)
	if granted.Valid {
		r.GrantedAt = FromMicros(granted.Int64)
	}
	return r, nil
}

func (t *Tx) requests(ctx context.Context, q string, args ...any) ([]driver.Request, error) {
	rows, err := t.Tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.Request
	for rows.Next() {
		r, err := ScanRequest(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// LockRequestList implements driver.Tx.
func (t *Tx) LockRequestList(ctx context.Context, ids []driver.Ident) ([]driver.Request, error) {
	var out []driver.Request
	for _, id := range ids {
		rs, err := t.requests(ctx, t.db.Q("request_list"), id.Kind, b(id.NS), b(id.Name))
		if err != nil {
			return nil, fmt.Errorf("request_list: %w", err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// LockRequestListBySession implements driver.Tx.
func (t *Tx) LockRequestListBySession(ctx context.Context, sessionID string, kind int, ns string) ([]driver.Request, error) {
	if kind < 0 {
		return t.requests(ctx, t.db.Q("request_list_by_session"), sessionID)
	}
	if ns == "" {
		return t.requests(ctx, t.db.Q("request_list_by_session_kind"), sessionID, kind)
	}
	return t.requests(ctx, t.db.Q("request_list_by_session_ns"), sessionID, kind, b(ns))
}

// LockRequestListCall implements driver.Tx.
func (t *Tx) LockRequestListCall(ctx context.Context, sessionID string, callID int64) ([]driver.Request, error) {
	return t.requests(ctx, t.db.Q("request_list_call"), sessionID, callID)
}

// LockRequestInsert implements driver.Tx.
func (t *Tx) LockRequestInsert(ctx context.Context, r driver.Request) (int64, error) {
	args := []any{r.SessionID, r.ClientID, r.Kind, b(r.NS), b(r.Name), r.Mode, r.Status, r.CallID, r.Token}
	if t.db.D.InsertReturning {
		var id int64
		if err := t.Tx.QueryRowContext(ctx, t.db.Q("request_insert"), args...).Scan(&id); err != nil {
			return 0, fmt.Errorf("request_insert: %w", err)
		}
		return id, nil
	}
	res, err := t.exec(ctx, "request_insert", args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// LockRequestSetStatus implements driver.Tx.
func (t *Tx) LockRequestSetStatus(ctx context.Context, id int64, from, to string, token int64) (bool, error) {
	res, err := t.exec(ctx, "request_set_status", to, token, id, from)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func int64Args(ids []int64) []any {
	out := make([]any, len(ids))
	for i, v := range ids {
		out[i] = v
	}
	return out
}

// LockRequestDelete implements driver.Tx.
func (t *Tx) LockRequestDelete(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	q := expandList(t.db.Q("request_delete"), t.db.D.Numbered, 1, len(ids))
	if _, err := t.Tx.ExecContext(ctx, q, int64Args(ids)...); err != nil {
		return fmt.Errorf("request_delete: %w", err)
	}
	return nil
}

// LockRequestStatuses implements driver.Tx.
func (t *Tx) LockRequestStatuses(ctx context.Context, ids []int64) (map[int64]driver.Request, error) {
	return RequestStatuses(ctx, t.Tx, t.db, ids)
}

// Querier is what *sql.DB and *sql.Tx have in common.
type Querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// RequestStatuses reads the requests with the given ids, outside or inside a
// transaction.
func RequestStatuses(ctx context.Context, q Querier, db *DB, ids []int64) (map[int64]driver.Request, error) {
	out := make(map[int64]driver.Request, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	query := expandList(db.Q("request_statuses"), db.D.Numbered, 1, len(ids))
	rows, err := q.QueryContext(ctx, query, int64Args(ids)...)
	if err != nil {
		return nil, fmt.Errorf("request_statuses: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := ScanRequest(rows)
		if err != nil {
			return nil, err
		}
		out[r.ID] = r
	}
	return out, rows.Err()
}

// LockWaitGraph implements driver.Tx.
func (t *Tx) LockWaitGraph(ctx context.Context) ([]driver.Request, error) {
	return t.requests(ctx, t.db.Q("wait_graph"))
}

// LockDetectorLock implements driver.Tx.
func (t *Tx) LockDetectorLock(ctx context.Context) error {
	rows, err := t.Tx.QueryContext(ctx, t.db.Q("detector_lock"))
	if err != nil {
		return fmt.Errorf("detector_lock: %w", err)
	}
	for rows.Next() {
	}
	rows.Close()
	return rows.Err()
}

// LockInfoList implements driver.Tx.
func (t *Tx) LockInfoList(ctx context.Context) ([]driver.LockInfo, error) {
	rows, err := t.Tx.QueryContext(ctx, t.db.Q("lock_info_list"))
	if err != nil {
		return nil, fmt.Errorf("lock_info_list: %w", err)
	}
	defer rows.Close()
	var out []driver.LockInfo
	for rows.Next() {
		var li driver.LockInfo
		r, err := ScanRequest(rows, &li.Host, &li.PID, &li.Owner)
		if err != nil {
			return nil, err
		}
		li.Request = r
		out = append(out, li)
	}
	return out, rows.Err()
}

// LockUserHolder implements driver.Tx.
func (t *Tx) LockUserHolder(ctx context.Context, name string) (string, bool, error) {
	var s string
	err := t.Tx.QueryRowContext(ctx, t.db.Q("user_holder"), driver.KindUser, b(""), b(name)).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("user_holder: %w", err)
	}
	return s, true, nil
}

// WakeClients implements driver.Tx.
func (t *Tx) WakeClients(ctx context.Context, clientIDs []string) error {
	if len(clientIDs) == 0 || t.db.D.Wake == nil {
		return nil
	}
	return t.db.D.Wake(ctx, t, clientIDs)
}

// LockFastAcquire implements driver.Driver with two statements in one
// transaction: a conditional upsert of the identifier's lock row that only
// succeeds when the lock is free for this mode and nobody waits, then the
// insert of the granted instance.
func (db *DB) LockFastAcquire(ctx context.Context, p driver.FastAcquireParams) (driver.Request, bool, error) {
	t, err := db.BeginTx(ctx)
	if err != nil {
		return driver.Request{}, false, err
	}
	defer t.Tx.Rollback()
	nr, nw := 1, 0
	if p.Mode == driver.ModeWrite {
		nr, nw = 0, 1
	}
	var fence int64
	err = t.Tx.QueryRowContext(ctx, db.Q("fast_acquire_ident"), p.Kind, b(p.NS), b(p.Name), nr, nw).Scan(&fence)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.Request{}, false, nil
	}
	if err != nil {
		return driver.Request{}, false, fmt.Errorf("fast_acquire_ident: %w", err)
	}
	r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident, Mode: p.Mode,
		Status: driver.StatusGranted, CallID: p.CallID, Token: fence}
	if r.ID, err = t.LockRequestInsert(ctx, r); err != nil {
		return driver.Request{}, false, err
	}
	if err := t.Commit(); err != nil {
		return driver.Request{}, false, err
	}
	return r, true, nil
}

// LockFastRelease implements driver.Driver.
func (db *DB) LockFastRelease(ctx context.Context, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	t, err := db.BeginTx(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer t.Tx.Rollback()
	var rs []driver.Request
	if p.Name == "" {
		rs, err = t.requests(ctx, db.Q("release_list_ns"), p.SessionID, p.Kind, b(p.NS))
	} else {
		rs, err = t.requests(ctx, db.Q("release_list_name"), p.SessionID, p.Kind, b(p.NS), b(p.Name))
	}
	if err != nil {
		return 0, nil, fmt.Errorf("release_list: %w", err)
	}
	if p.Limit > 0 && len(rs) > p.Limit {
		rs = rs[:p.Limit]
	}
	if len(rs) == 0 {
		return 0, nil, nil
	}
	ids := make([]int64, len(rs))
	type delta struct{ r, w int }
	deltas := map[driver.Ident]*delta{}
	var order []driver.Ident
	for i, r := range rs {
		ids[i] = r.ID
		d := deltas[r.Ident]
		if d == nil {
			d = &delta{}
			deltas[r.Ident] = d
			order = append(order, r.Ident)
		}
		if r.Mode == driver.ModeWrite {
			d.w++
		} else {
			d.r++
		}
	}
	if err := t.LockRequestDelete(ctx, ids); err != nil {
		return 0, nil, err
	}
	sortIdents(order)
	var waiting []driver.Ident
	for _, id := range order {
		d := deltas[id]
		var np int64
		var err error
		if db.D.UpdateReturning {
			err = t.Tx.QueryRowContext(ctx, db.Q("ident_release"), d.r, d.w, id.Kind, b(id.NS), b(id.Name)).Scan(&np)
		} else if _, err = t.exec(ctx, "ident_release", d.r, d.w, id.Kind, b(id.NS), b(id.Name)); err == nil {
			err = t.Tx.QueryRowContext(ctx, db.Q("ident_waiting"), id.Kind, b(id.NS), b(id.Name)).Scan(&np)
		}
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, nil, fmt.Errorf("ident_release: %w", err)
		}
		if np > 0 {
			waiting = append(waiting, id)
		}
	}
	if err := t.Commit(); err != nil {
		return 0, nil, err
	}
	return len(rs), waiting, nil
}

func sortIdents(ids []driver.Ident) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j].Less(ids[j-1]); j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}

// IsRetryable implements driver.Driver.
func (db *DB) IsRetryable(err error) bool {
	return err != nil && db.D.IsRetryable != nil && db.D.IsRetryable(err)
}

// LockRequestStatuses implements driver.Driver.
func (db *DB) LockRequestStatuses(ctx context.Context, ids []int64) (map[int64]driver.Request, error) {
	return RequestStatuses(ctx, db.SQL, db, ids)
}
