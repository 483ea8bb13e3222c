package sqlbase

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
)

// Dialect is what a backend supplies to the shared implementation.
type Dialect struct {
	// Name is the backend's short name.
	Name string
	// FinishMoves is true where marking a message finished (state K, X or
	// D) moves it to the history by itself (SQLite's trigger, migration
	// 019): no copy and delete follow.
	FinishMoves bool
	// Numbered is true for $1-style bind variables (PostgreSQL).
	Numbered bool
	// InsertReturning is true when INSERT ... RETURNING id is supported;
	// otherwise Result.LastInsertId is used.
	InsertReturning bool
	// DeleteReturning is true when DELETE ... RETURNING is supported: the
	// release path then deletes with release_delete_ns / release_delete_name
	// (whose last parameter is a row limit, -1 for all) instead of selecting
	// first.
	DeleteReturning bool
	// UpdateReturning is true when UPDATE ... RETURNING is supported;
	// otherwise ident_release is executed and ident_waiting read after it.
	UpdateReturning bool
	// Queries are the named queries of the dialect's query file.
	Queries map[string]string
	// PrepareOnUse prepares a statement the first time it runs outside a
	// transaction (SQLite: preparing is in-process, so a one-shot command
	// pays only for the statements it runs, and a busy client gets the
	// prepared fast paths at once instead of after Prepare).
	PrepareOnUse bool
	// TxOptions are used for every transaction.
	TxOptions *sql.TxOptions
	// Wake is called inside a transaction to wake clients once it commits
	// (the entries as driver.Tx.WakeClients takes them).
	Wake func(ctx context.Context, t *Tx, wake []driver.Request) error
	// Events supplies change capture (table descriptions and triggers).
	Events *EventsDialect
	// IsRetryable reports whether a transaction failed only because of a
	// transient conflict inside the database (deadlock, serialization,
	// busy) and can be run again.
	IsRetryable func(error) bool
	// Adopt, where set, runs in LockIdentLock once each identifier's row
	// lock is taken, and may raise st's fence and counters (MySQL: the
	// slow path takes over what the identifier has outside InnoDB).
	Adopt func(ctx context.Context, t *Tx, st *driver.IdentState) error
	// Deleted, where set, runs in LockRequestDelete after the delete.
	Deleted func(ctx context.Context, t *Tx, ids []int64) error
	// Updated, where set, runs in LockIdentUpdate after the update.
	Updated func(ctx context.Context, t *Tx, st driver.IdentState)
	// PurgeIdle, where set, is LockIdentPurgeIdle (MySQL: each idle row
	// deleted under its identifier's mutex, which no single statement can
	// take beside its MEMORY tables); otherwise ident_purge_idle deletes
	// them in one statement.
	PurgeIdle func(ctx context.Context, t *Tx) (int, error)
	// Writers, where set, is entered by every transaction (BeginTx) until
	// it ends (SQLite: its transactions take the database's write lock at
	// BEGIN, and this process's writers queue for it here).
	Writers *Gate
}

// DB is a backend built on database/sql. Backends embed it and add what is
// theirs (listening, migration locking, faster paths).
type DB struct {
	SQL *sql.DB
	D   *Dialect
	// NoPrepare keeps every statement unnamed: behind a transaction pooler
	// a named server-side statement lands on a server connection that
	// other clients share, and collides or goes missing.
	NoPrepare bool

	stmts  sync.Map // query name -> *sql.Stmt, filled by Prepare
	listed sync.Map // expanded text -> *sql.Stmt (listedStmt)
	log    atomic.Pointer[slog.Logger]
}

// SetLogger implements driver.Driver: what the backend logs goes to l.
func (db *DB) SetLogger(l *slog.Logger) { db.log.Store(l) }

// Logger is the backend's logger: the client's (SetLogger), else
// slog.Default().
func (db *DB) Logger() *slog.Logger {
	if l := db.log.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// listedMax is how many items a {list} query may have for listedStmt to
// keep it prepared: a few texts per query at most.
const listedMax = 4

// listedStmt returns a {list} query expanded for n items (its text q),
// prepared and kept, on a PrepareOnUse backend outside a transaction with
// at most listedMax items; nil otherwise (it then runs as text). An idle
// SQLite client renews its one session and reads notifications with no
// gaps about once a second, and parsing those two statements each time
// was a twelfth of its CPU.
func (db *DB) listedStmt(ctx context.Context, tx *sql.Tx, q string, n int) *sql.Stmt {
	if tx != nil || n > listedMax || !db.D.PrepareOnUse || db.NoPrepare {
		return nil
	}
	if v, ok := db.listed.Load(q); ok {
		return v.(*sql.Stmt)
	}
	return db.keep(ctx, &db.listed, q, q)
}

// listed is what runs q, a {list} query expanded for n items: its kept
// statement (listedStmt), or else the transaction or the pool, as text.
func (t *Tx) listed(ctx context.Context, q string, n int) execQuerier {
	if st := t.db.listedStmt(ctx, t.Tx, q, n); st != nil {
		return keptStmt{st}
	}
	return t.q()
}

// keptStmt runs a prepared statement where an execQuerier is asked for:
// the query text passed is the statement's own.
type keptStmt struct{ st *sql.Stmt }

func (k keptStmt) ExecContext(ctx context.Context, _ string, args ...any) (sql.Result, error) {
	return k.st.ExecContext(ctx, args...)
}

func (k keptStmt) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return k.st.QueryContext(ctx, args...)
}

// keep prepares q and stores it in m under key, or returns the statement
// another caller stored there meanwhile; nil when q cannot be prepared.
func (db *DB) keep(ctx context.Context, m *sync.Map, key, q string) *sql.Stmt {
	st, err := db.SQL.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	if v, loaded := m.LoadOrStore(key, st); loaded {
		st.Close() // prepared meanwhile by another caller
		return v.(*sql.Stmt)
	}
	return st
}

// Prepare prepares every named query that has no {list} marker, once the
// schema exists (after migrations). Transactions then reuse the prepared
// statements instead of parsing SQL on every call. Queries that cannot be
// prepared yet are left to run as text.
func (db *DB) Prepare(ctx context.Context) error {
	if db.NoPrepare {
		return nil
	}
	for name := range db.D.Queries {
		if _, ok := db.stmts.Load(name); !ok {
			db.prepareOne(ctx, name)
		}
	}
	return nil
}

// PrepareNamed prepares one named query now, unless it is prepared
// already (or cannot be, or the DB never prepares): for a backend's hot
// statements before Prepare runs.
func (db *DB) PrepareNamed(ctx context.Context, name string) {
	if _, ok := db.stmts.Load(name); !ok && !db.NoPrepare {
		db.prepareOne(ctx, name)
	}
}

// prepareOne prepares a named query and keeps it; nil when it cannot be
// prepared (it then runs as text).
func (db *DB) prepareOne(ctx context.Context, name string) *sql.Stmt {
	q := db.D.Queries[name]
	if q == "" || strings.Contains(q, "{list") || strings.Contains(q, "{pairs") {
		return nil
	}
	return db.keep(ctx, &db.stmts, name, q)
}

// stmtFor returns the prepared statement of a query, bound to tx when tx is
// not nil, or nil when it is not prepared.
func (db *DB) stmtFor(ctx context.Context, tx *sql.Tx, name string) *sql.Stmt {
	v, ok := db.stmts.Load(name)
	if !ok && tx == nil && db.D.PrepareOnUse && !db.NoPrepare {
		// Outside a transaction only: inside one, preparing on the pool
		// would wait for the connection the transaction holds (SQLite has
		// one).
		return db.prepareOne(ctx, name)
	}
	if !ok {
		return nil
	}
	if tx == nil {
		return v.(*sql.Stmt)
	}
	return tx.StmtContext(ctx, v.(*sql.Stmt))
}

// ExecNamed runs a named query outside (tx nil) or inside a transaction.
func (db *DB) ExecNamed(ctx context.Context, tx *sql.Tx, name string, args ...any) (sql.Result, error) {
	var r sql.Result
	var err error
	if st := db.stmtFor(ctx, tx, name); st != nil {
		r, err = st.ExecContext(ctx, args...)
	} else if tx != nil {
		r, err = tx.ExecContext(ctx, db.Q(name), args...)
	} else {
		r, err = db.SQL.ExecContext(ctx, db.Q(name), args...)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

// QueryNamed runs a named query returning rows.
func (db *DB) QueryNamed(ctx context.Context, tx *sql.Tx, name string, args ...any) (*sql.Rows, error) {
	var rows *sql.Rows
	var err error
	if st := db.stmtFor(ctx, tx, name); st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else if tx != nil {
		rows, err = tx.QueryContext(ctx, db.Q(name), args...)
	} else {
		rows, err = db.SQL.QueryContext(ctx, db.Q(name), args...)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return rows, nil
}

// RowNamed runs a named query returning one row.
func (db *DB) RowNamed(ctx context.Context, tx *sql.Tx, name string, args ...any) *sql.Row {
	if st := db.stmtFor(ctx, tx, name); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	if tx != nil {
		return tx.QueryRowContext(ctx, db.Q(name), args...)
	}
	return db.SQL.QueryRowContext(ctx, db.Q(name), args...)
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
	leave := func() {}
	if db.D.Writers != nil {
		var err error
		if leave, err = db.D.Writers.Enter(ctx); err != nil {
			return nil, err
		}
	}
	tx, err := db.SQL.BeginTx(ctx, db.D.TxOptions)
	if err != nil {
		leave()
		return nil, err
	}
	return &Tx{Tx: tx, db: db, leave: leave}, nil
}

// Tx implements driver.Tx.
type Tx struct {
	Tx *sql.Tx
	db *DB
	// caller, when set, is the program's own transaction, which runs
	// every statement instead (CallerQueueTx); Tx is nil then.
	caller driver.CallerStatements
	after  []func()
	// leave leaves the dialect's Writers gate; nil once called.
	leave func()
}

// ended leaves the Writers gate once the transaction is over.
func (t *Tx) ended() {
	if t.leave != nil {
		t.leave()
		t.leave = nil
	}
}

// NoTx returns a Tx whose statements run on their own, each in its own
// implicit transaction: for operations that are one statement. Commit and
// Rollback do nothing (AfterCommit hooks run at Commit).
func (db *DB) NoTx() driver.Tx { return &Tx{db: db} }

// Relaxed implements driver.Driver: by default the same as NoTx.
func (db *DB) Relaxed() driver.Tx { return db.NoTx() }

// execQuerier is what *sql.DB and *sql.Tx have in common.
type execQuerier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// q is the transaction, or the pool for a NoTx.
func (t *Tx) q() execQuerier {
	if t.caller != nil {
		// A method that reads several rows: not one of CallerQueueTx's.
		panic("baton/sqlbase: a statement that cannot run in the caller's transaction")
	}
	if t.Tx == nil {
		return t.db.SQL
	}
	return t.Tx
}

// AfterCommit registers f to run after a successful commit.
func (t *Tx) AfterCommit(f func()) { t.after = append(t.after, f) }

// Commit implements driver.Tx.
func (t *Tx) Commit() error {
	if t.Tx != nil {
		err := t.Tx.Commit()
		t.ended()
		if err != nil {
			return err
		}
	}
	for _, f := range t.after {
		f()
	}
	return nil
}

// Rollback implements driver.Tx.
func (t *Tx) Rollback() error {
	if t.Tx == nil {
		return nil
	}
	defer t.ended()
	return t.Tx.Rollback()
}

func (t *Tx) exec(ctx context.Context, name string, args ...any) (sql.Result, error) {
	if t.caller != nil {
		r, err := t.caller.ExecContext(ctx, t.db.Q(name), args...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return r, nil
	}
	return t.db.ExecNamed(ctx, t.Tx, name, args...)
}

// Exec runs a named statement in the transaction (on the pool for a NoTx),
// for a backend's own methods.
func (t *Tx) Exec(ctx context.Context, name string, args ...any) (sql.Result, error) {
	return t.exec(ctx, name, args...)
}

// Row runs a named query returning one row in the transaction.
func (t *Tx) Row(ctx context.Context, name string, args ...any) *sql.Row {
	return t.db.RowNamed(ctx, t.Tx, name, args...)
}

func (t *Tx) row(ctx context.Context, name string, args ...any) Scanner {
	if t.caller != nil {
		return callerRow{ctx: ctx, c: t.caller, q: t.db.Q(name), args: args}
	}
	return t.db.RowNamed(ctx, t.Tx, name, args...)
}

// callerRow is a row read in the program's own transaction (Tx.caller).
type callerRow struct {
	ctx  context.Context
	c    driver.CallerStatements
	q    string
	args []any
}

func (r callerRow) Scan(dest ...any) error { return r.c.ScanRow(r.ctx, r.q, r.args, dest...) }

// CallerQueueTx implements driver.Driver: the queue control statements in
// the program's own transaction.
func (db *DB) CallerQueueTx(c driver.CallerStatements) driver.CallerQueueTx {
	return &Tx{db: db, caller: c}
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
	_, err := t.exec(ctx, "session_insert", s.ID, s.ClientID, s.Host, s.PID, s.Name, us(lease), s.HostID)
	return err
}

// SessionRenew implements driver.Tx.
func (t *Tx) SessionRenew(ctx context.Context, ids []string, lease time.Duration) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	q := expandList(t.db.Q("session_renew"), t.db.D.Numbered, 2, len(ids))
	args := append([]any{us(lease)}, StringArgs(ids)...)
	r, err := t.listed(ctx, q, len(ids)).ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("session_renew: %w", err)
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

// SessionListReapable implements driver.Tx.
func (t *Tx) SessionListReapable(ctx context.Context, clientID, hostID string, limit int) ([]driver.SessionRef, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "session_list_reapable", clientID, hostID, limit)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, func(sc Scanner) (driver.SessionRef, error) {
		var r driver.SessionRef
		err := sc.Scan(&r.ID, &r.PID, &r.Expired)
		return r, err
	})
}

func (t *Tx) strings(ctx context.Context, name string, args ...any) ([]string, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, name, args...)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, ScanString)
}

// LockIdentLock implements driver.Tx. The lock row nearly always exists
// (whoever holds or waits keeps it), so ident_lock (a locking read) runs first
// and ident_ensure only when it found nothing, then ident_lock again: one
// statement per identifier in the common case. A locking read of a missing
// key takes no lock at READ COMMITTED; the insert then creates the row, or
// waits for whoever is creating it.
func (t *Tx) LockIdentLock(ctx context.Context, ids []driver.Ident) ([]driver.IdentState, error) {
	out := make([]driver.IdentState, 0, len(ids))
	for _, id := range ids {
		st := driver.IdentState{Ident: id}
		lock := func() error {
			return t.row(ctx, "ident_lock", id.Kind, b(id.NS), b(id.Name)).
				Scan(&st.Fence, &st.Readers, &st.Writers, &st.Waiting, &st.Gated)
		}
		err := lock()
		if errors.Is(err, sql.ErrNoRows) {
			if _, err = t.exec(ctx, "ident_ensure", id.Kind, b(id.NS), b(id.Name)); err != nil {
				return nil, err
			}
			err = lock()
		}
		if err != nil {
			return nil, fmt.Errorf("ident_lock: %w", err)
		}
		if t.db.D.Adopt != nil {
			if err := t.db.D.Adopt(ctx, t, &st); err != nil {
				return nil, err
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// LockIdentUpdate implements driver.Tx.
func (t *Tx) LockIdentUpdate(ctx context.Context, st driver.IdentState) error {
	_, err := t.exec(ctx, "ident_update", st.Fence, st.Readers, st.Writers, st.Waiting, st.Kind, b(st.NS), b(st.Name))
	if err == nil && t.db.D.Updated != nil {
		t.db.D.Updated(ctx, t, st)
	}
	return err
}

// LockIdentPurgeIdle implements driver.Tx.
func (t *Tx) LockIdentPurgeIdle(ctx context.Context) (int, error) {
	if t.db.D.PurgeIdle != nil {
		return t.db.D.PurgeIdle(ctx, t)
	}
	return rowCount(t.exec(ctx, "ident_purge_idle"))
}

// RequestCols is the column list every request query selects, in the order
// ScanRequest reads them.
const RequestCols = "id, session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at, granted_at"

// ScanRequest reads one request row (RequestCols) plus extra destinations.
func ScanRequest(sc Scanner, extra ...any) (driver.Request, error) {
	var r driver.Request
	var ns, name []byte
	var mode, status string // plain strings: database/sql converts into them without reflection
	var created int64
	var granted sql.NullInt64
	dest := append([]any{&r.ID, &r.SessionID, &r.ClientID, &r.Kind, &ns, &name, &mode, &status, &r.CallID, &r.Token, &created, &granted}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return r, err
	}
	r.NS, r.Name = string(ns), string(name)
	r.Mode, r.Status = driver.LockMode(mode), driver.RequestStatus(status)
	r.CreatedAt = FromMicros(created)
	if granted.Valid {
		r.GrantedAt = FromMicros(granted.Int64)
	}
	return r, nil
}

func (t *Tx) requests(ctx context.Context, name string, args ...any) ([]driver.Request, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, name, args...)
	if err != nil {
		return nil, err
	}
	return ScanRequests(rows)
}

// LockRequestList implements driver.Tx.
func (t *Tx) LockRequestList(ctx context.Context, ids []driver.Ident) ([]driver.Request, error) {
	var out []driver.Request
	for _, id := range ids {
		rs, err := t.requests(ctx, "request_list", id.Kind, b(id.NS), b(id.Name))
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// LockRequestListBySession implements driver.Tx.
func (t *Tx) LockRequestListBySession(ctx context.Context, sessionID string, kind int, ns string) ([]driver.Request, error) {
	if kind < 0 {
		return t.requests(ctx, "request_list_by_session", sessionID)
	}
	if ns == "" {
		return t.requests(ctx, "request_list_by_session_kind", sessionID, kind)
	}
	return t.requests(ctx, "request_list_by_session_ns", sessionID, kind, b(ns))
}

// LockRequestListOrphans implements driver.Tx.
func (t *Tx) LockRequestListOrphans(ctx context.Context, limit int) ([]driver.Request, error) {
	return t.requests(ctx, "request_list_orphans", limit)
}

// LockRequestListCall implements driver.Tx.
func (t *Tx) LockRequestListCall(ctx context.Context, sessionID string, callID int64, ids []driver.Ident) ([]driver.Request, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	lo, hi := ids[0].Name, ids[0].Name
	for _, id := range ids[1:] {
		lo, hi = min(lo, id.Name), max(hi, id.Name)
	}
	return t.requests(ctx, "request_list_call", sessionID, callID, ids[0].Kind, b(ids[0].NS), b(lo), b(hi))
}

// LockRequestInsert implements driver.Tx.
func (t *Tx) LockRequestInsert(ctx context.Context, r driver.Request) (int64, error) {
	// The mode and status as plain strings: drivers convert a named string
	// type by reflection.
	args := []any{r.SessionID, r.ClientID, r.Kind, b(r.NS), b(r.Name), string(r.Mode), string(r.Status), r.CallID, r.Token}
	if t.db.D.InsertReturning {
		var id int64
		if err := t.row(ctx, "request_insert", args...).Scan(&id); err != nil {
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
func (t *Tx) LockRequestSetStatus(ctx context.Context, id int64, from, to driver.RequestStatus, token int64) (bool, error) {
	res, err := t.exec(ctx, "request_set_status", string(to), token, id, string(from))
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
	if _, err := t.q().ExecContext(ctx, q, int64Args(ids)...); err != nil {
		return fmt.Errorf("request_delete: %w", err)
	}
	if t.db.D.Deleted != nil {
		return t.db.D.Deleted(ctx, t, ids)
	}
	return nil
}

// LockRequestStatuses implements driver.Tx.
func (t *Tx) LockRequestStatuses(ctx context.Context, ids []int64) (map[int64]driver.Request, error) {
	return RequestStatuses(ctx, t.q(), t.db, ids)
}

// Querier is what *sql.DB and *sql.Tx have in common.
type Querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// RequestStatuses reads the requests with the given ids, outside or inside a
// transaction.
func RequestStatuses(ctx context.Context, q Querier, db *DB, ids []int64) (map[int64]driver.Request, error) {
	out, _, err := requestStatuses(ctx, q, db, ids, false)
	return out, err
}

// StatusesGated serves driver.Locks' LockRequestStatusesGated for a dialect whose
// request_statuses_gated query adds to request_statuses' columns whether
// the request's identifier is gated.
func StatusesGated(ctx context.Context, db *DB, ids []int64) (map[int64]driver.Request, []driver.Ident, error) {
	return requestStatuses(ctx, db.SQL, db, ids, true)
}

func requestStatuses(ctx context.Context, q Querier, db *DB, ids []int64, gates bool) (map[int64]driver.Request, []driver.Ident, error) {
	out := make(map[int64]driver.Request, len(ids))
	if len(ids) == 0 {
		return out, nil, nil
	}
	name := "request_statuses"
	var gated []driver.Ident
	var isGated bool
	var extra []any
	if gates {
		name, extra = "request_statuses_gated", []any{&isGated}
	}
	query := expandList(db.Q(name), db.D.Numbered, 1, len(ids))
	rows, err := q.QueryContext(ctx, query, int64Args(ids)...)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := ScanRequest(rows, extra...)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		out[r.ID] = r
		if isGated && !slices.Contains(gated, r.Ident) {
			gated = append(gated, r.Ident)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, gated, nil
}

// LockWaitGraph implements driver.Tx.
func (t *Tx) LockWaitGraph(ctx context.Context) ([]driver.Request, error) {
	return t.requests(ctx, "wait_graph")
}

// LockDetectorLock implements driver.Tx.
func (t *Tx) LockDetectorLock(ctx context.Context) error {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "detector_lock")
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	rows.Close()
	return rows.Err()
}

// LockInfoList implements driver.Tx.
func (t *Tx) LockInfoList(ctx context.Context) ([]driver.LockInfo, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "lock_info_list")
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, func(sc Scanner) (driver.LockInfo, error) {
		var li driver.LockInfo
		r, err := ScanRequest(sc, &li.Host, &li.PID, &li.Owner)
		li.Request = r
		return li, err
	})
}

// SessionList implements driver.Tx.
func (t *Tx) SessionList(ctx context.Context) ([]driver.Session, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "session_list")
	if err != nil {
		return nil, fmt.Errorf("session_list: %w", err)
	}
	return ScanAll(rows, scanSession)
}

// scanSession reads one row of session_list; its errors name the query.
func scanSession(sc Scanner) (driver.Session, error) {
	var s driver.Session
	var created, expires int64
	if err := sc.Scan(&s.ID, &s.ClientID, &s.Host, &s.PID, &s.Name, &s.HostID, &created, &expires); err != nil {
		return s, fmt.Errorf("session_list: %w", err)
	}
	s.CreatedAt, s.ExpiresAt = FromMicros(created), FromMicros(expires)
	return s, nil
}

// LockUserHolder implements driver.Tx.
func (t *Tx) LockUserHolder(ctx context.Context, name string) (string, bool, error) {
	var s string
	err := t.row(ctx, "user_holder", driver.KindUser, b(""), b(name)).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("user_holder: %w", err)
	}
	return s, true, nil
}

// WakeClients implements driver.Tx.
func (t *Tx) WakeClients(ctx context.Context, wake []driver.Request) error {
	if len(wake) == 0 || t.db.D.Wake == nil {
		return nil
	}
	return t.db.D.Wake(ctx, t, wake)
}

// ByClient sorts WakeClients entries by client, in the order clients
// first appear: a client's grants, or nil when any entry of its asks it to
// look (its waiters then read their statuses).
func ByClient(wake []driver.Request) (order []string, grants map[string][]driver.Request) {
	grants = map[string][]driver.Request{}
	for _, w := range wake {
		gs, seen := grants[w.ClientID]
		if !seen {
			order = append(order, w.ClientID)
		}
		if w.ID == 0 || (seen && gs == nil) {
			grants[w.ClientID] = nil
		} else {
			grants[w.ClientID] = append(gs, w)
		}
	}
	return order, grants
}

// Looks are WakeClients entries that ask each of clientIDs to look.
func Looks(clientIDs []string) []driver.Request {
	wake := make([]driver.Request, len(clientIDs))
	for i, id := range clientIDs {
		wake[i].ClientID = id
	}
	return wake
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
	defer t.Rollback()
	nr, nw := ModeCounts(p.Mode)
	var fence int64
	err = t.row(ctx, "fast_acquire_ident", p.Kind, b(p.NS), b(p.Name), nr, nw).Scan(&fence)
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

// ModeCounts is what one lock of mode adds to its identifier's counts of
// granted readers and writers.
func ModeCounts(mode driver.LockMode) (readers, writers int) {
	if mode == driver.ModeWrite {
		return 0, 1
	}
	return 1, 0
}

// LockFastRelease implements driver.Driver.
func (db *DB) LockFastRelease(ctx context.Context, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	t, err := db.BeginTx(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer t.Rollback()
	rs, err := t.releaseInstances(ctx, p)
	if err != nil || len(rs) == 0 {
		return 0, nil, err
	}
	waiting, err := t.lowerCounters(ctx, rs)
	if err != nil {
		return 0, nil, err
	}
	if err := t.Commit(); err != nil {
		return 0, nil, err
	}
	return len(rs), waiting, nil
}

// releaseInstances deletes the instances a release names and returns
// them: in one statement where the dialect deletes with RETURNING.
func (t *Tx) releaseInstances(ctx context.Context, p driver.FastReleaseParams) ([]driver.Request, error) {
	if t.db.D.DeleteReturning {
		return t.releaseDelete(ctx, p)
	}
	return t.releaseSelect(ctx, p)
}

// lowerCounters lowers each identifier's counters by the released
// instances and returns the identifiers that have waiters.
func (t *Tx) lowerCounters(ctx context.Context, rs []driver.Request) ([]driver.Ident, error) {
	return LowerCounters(rs, func(d ReleaseDelta) (int64, error) { return t.identRelease(ctx, d) })
}

// LowerCounters lowers, with release, each identifier's counters by the
// released instances rs, in canonical order, and returns the identifiers
// that have waiters (release returns an identifier's waiting count).
func LowerCounters(rs []driver.Request, release func(ReleaseDelta) (int64, error)) ([]driver.Ident, error) {
	var waiting []driver.Ident
	for _, d := range ReleaseDeltas(rs) {
		np, err := release(d)
		if err != nil {
			return nil, err
		}
		if np > 0 {
			waiting = append(waiting, d.Ident)
		}
	}
	return waiting, nil
}

// identRelease lowers one identifier's counters and returns its number of
// waiting requests (0 when its row is gone).
func (t *Tx) identRelease(ctx context.Context, d ReleaseDelta) (int64, error) {
	id := d.Ident
	var np int64
	var err error
	if t.db.D.UpdateReturning {
		err = t.row(ctx, "ident_release", d.Readers, d.Writers, id.Kind, b(id.NS), b(id.Name)).Scan(&np)
	} else if _, err = t.exec(ctx, "ident_release", d.Readers, d.Writers, id.Kind, b(id.NS), b(id.Name)); err == nil {
		err = t.row(ctx, "ident_waiting", id.Kind, b(id.NS), b(id.Name)).Scan(&np)
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("ident_release: %w", err)
	}
	return np, nil
}

// releaseSelect lists the instances to release, then deletes them.
func (t *Tx) releaseSelect(ctx context.Context, p driver.FastReleaseParams) ([]driver.Request, error) {
	rs, err := t.releaseList(ctx, p)
	if err != nil {
		return nil, err
	}
	rs = ReleaseTaken(rs, p.Limit)
	ids := make([]int64, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return rs, t.LockRequestDelete(ctx, ids)
}

// releaseList lists the session's instances a release names: every name
// of the namespace, or one.
func (t *Tx) releaseList(ctx context.Context, p driver.FastReleaseParams) ([]driver.Request, error) {
	if p.Name == "" {
		return t.requests(ctx, "release_list_ns", p.SessionID, p.Kind, b(p.NS))
	}
	return t.requests(ctx, "release_list_name", p.SessionID, p.Kind, b(p.NS), b(p.Name))
}

// ReleaseTaken is what a release takes of the listed instances rs: newest
// (highest id) first, at most limit of them (0: all), so that a release
// with a limit keeps the oldest. The order is set here, not by the
// release_list queries (MySQL's read the session's index forwards:
// queries.sql).
func ReleaseTaken(rs []driver.Request, limit int) []driver.Request {
	slices.SortFunc(rs, func(a, b driver.Request) int { return cmp.Compare(b.ID, a.ID) })
	if limit > 0 && len(rs) > limit {
		rs = rs[:limit]
	}
	return rs
}

// releaseDelete deletes the instances to release in one statement.
func (t *Tx) releaseDelete(ctx context.Context, p driver.FastReleaseParams) ([]driver.Request, error) {
	var rows *sql.Rows
	var err error
	if limit := ReleaseLimit(p); p.Name == "" {
		rows, err = t.db.QueryNamed(ctx, t.Tx, "release_delete_ns", p.SessionID, p.Kind, b(p.NS), limit)
	} else {
		rows, err = t.db.QueryNamed(ctx, t.Tx, "release_delete_name", p.SessionID, p.Kind, b(p.NS), b(p.Name), limit)
	}
	if err != nil {
		return nil, err
	}
	return ScanReleased(rows)
}

// ReleaseLimit is a release's row limit as the release_delete queries
// take it: -1 for every matching instance.
func ReleaseLimit(p driver.FastReleaseParams) int {
	if p.Limit > 0 {
		return p.Limit
	}
	return -1
}

// ReleaseDelta is how many granted readers and writers a release removes
// from one identifier.
type ReleaseDelta struct {
	driver.Ident
	Readers, Writers int
}

// ReleaseDeltas sums released instances per identifier, in canonical
// order (the order every multi-identifier operation locks in).
func ReleaseDeltas(rs []driver.Request) []ReleaseDelta {
	byIdent := map[driver.Ident]*ReleaseDelta{}
	var order []driver.Ident
	for _, r := range rs {
		d := byIdent[r.Ident]
		if d == nil {
			d = &ReleaseDelta{Ident: r.Ident}
			byIdent[r.Ident] = d
			order = append(order, r.Ident)
		}
		if r.Mode == driver.ModeWrite {
			d.Writers++
		} else {
			d.Readers++
		}
	}
	sortIdents(order)
	out := make([]ReleaseDelta, len(order))
	for i, id := range order {
		out[i] = *byIdent[id]
	}
	return out
}

func sortIdents(ids []driver.Ident) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j].Less(ids[j-1]); j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}

// SessionHeartbeat implements driver.Driver with two statements, each
// on its own (no transaction needed).
func (db *DB) SessionHeartbeat(ctx context.Context, p driver.HeartbeatParams) (int, []driver.SessionRef, error) {
	t := &Tx{db: db}
	n, err := t.SessionRenew(ctx, p.SessionIDs, p.Lease)
	if err != nil {
		return 0, nil, err
	}
	refs, err := t.SessionListReapable(ctx, p.ClientID, p.HostID, p.Limit)
	return n, refs, err
}

// LockRegrant implements driver.Locks: no shortcut by default.
func (db *DB) LockRegrant(context.Context, []driver.Ident) (bool, error) { return false, nil }

// LockFastAcquireMany implements driver.Locks for a backend that does
// not acquire many names at once (AcquiresMany false): never called.
func (db *DB) LockFastAcquireMany(context.Context, driver.FastAcquireParams, []string) ([]driver.Request, bool, error) {
	return nil, false, nil
}

// LockRequest implements driver.Locks with no one-call slow path: the
// engine decides in its own transaction.
func (db *DB) LockRequest(context.Context, driver.RequestParams) (driver.Request, error) {
	return driver.Request{}, driver.ErrRequestInTx
}

// LockRequestsRemove implements driver.Locks for a backend that does not
// withdraw in one call (RemovesInOneCall false): nothing handled.
func (db *DB) LockRequestsRemove(context.Context, []driver.Request) (bool, error) { return false, nil }

// LockCallWithdraw implements driver.Locks as LockRequestsRemove does.
func (db *DB) LockCallWithdraw(context.Context, string, int64, []driver.Ident, bool) (bool, error) {
	return false, nil
}

// LockReleaseTx implements driver.Locks for a backend that does not
// release in the engine's transaction (ReleasesInTx false): never called.
func (db *DB) LockReleaseTx(context.Context, driver.Tx, driver.FastReleaseParams) (int, []driver.Ident, error) {
	return 0, nil, errors.New("baton/sqlbase: LockReleaseTx of a backend that does not release in a transaction")
}

// Incarnation implements driver.Sessions for a backend whose lock state
// survives a crash: 0, and no wait.
func (db *DB) Incarnation(context.Context, time.Duration) (int64, time.Duration, error) {
	return 0, 0, nil
}

// IsRetryable implements driver.Driver.
func (db *DB) IsRetryable(err error) bool {
	return err != nil && db.D.IsRetryable != nil && db.D.IsRetryable(err)
}

// LockConflictHeld implements driver.Driver.
func (db *DB) LockConflictHeld(ctx context.Context, sessionID string, id driver.Ident, mode driver.LockMode) (bool, error) {
	args := []any{id.Kind, b(id.NS), b(id.Name), sessionID, string(mode)}
	if !db.D.Numbered {
		// Once for the inline holders, once for the request rows.
		args = append(args, args...)
	}
	var held bool
	if err := db.RowNamed(ctx, nil, "lock_conflict_held", args...).Scan(&held); err != nil {
		return false, fmt.Errorf("lock_conflict_held: %w", err)
	}
	return held, nil
}

// LockRequestStatuses implements driver.Driver.
func (db *DB) LockRequestStatuses(ctx context.Context, ids []int64) (map[int64]driver.Request, error) {
	return RequestStatuses(ctx, db.SQL, db, ids)
}

// QueuesReady implements driver.Driver.
func (db *DB) QueuesReady(ctx context.Context, queues []string) ([]string, error) {
	if len(queues) == 0 {
		return nil, nil
	}
	q := expandList(db.Q("queues_ready"), db.D.Numbered, 1, len(queues))
	rows, err := (&Tx{db: db}).listed(ctx, q, len(queues)).QueryContext(ctx, q, StringArgs(queues)...)
	return ScanNames("queues_ready", rows, err)
}

// ScanNames reads the one text column of the query name's rows.
func ScanNames(name string, rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	names, err := ScanAll(rows, func(sc Scanner) (string, error) {
		var s string
		err := sc.Scan(&s)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return names, nil
}

// StringArgs are strings as statement arguments.
func StringArgs(v []string) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = x
	}
	return out
}

// GatedAmong implements driver.Locks's TxGatedAmong for the backends
// that mark gated identifiers in lock_idents (tx_gated_among): one
// statement for up to gatedBatch identifiers, a key lookup each.
func GatedAmong(ctx context.Context, db *DB, ids []driver.Ident) ([]driver.Ident, error) {
	var out []driver.Ident
	for len(ids) > 0 {
		part := ids[:min(len(ids), gatedBatch)]
		ids = ids[len(part):]
		args := make([]any, 0, 3*len(part))
		for _, id := range part {
			args = append(args, id.Kind, b(id.NS), b(id.Name))
		}
		rows, err := db.SQL.QueryContext(ctx, expandKeys(db.Q("tx_gated_among"), db.D.Numbered, len(part)), args...)
		if err != nil {
			return nil, fmt.Errorf("tx_gated_among: %w", err)
		}
		got, err := ScanAll(rows, ScanIdent)
		if err != nil {
			return nil, fmt.Errorf("tx_gated_among: %w", err)
		}
		out = append(out, got...)
	}
	return out, nil
}

// ScanIdent reads an identifier from a row of kind, namespace and name.
func ScanIdent(sc Scanner) (driver.Ident, error) {
	var id driver.Ident
	var ns, name []byte
	err := sc.Scan(&id.Kind, &ns, &name)
	id.NS, id.Name = string(ns), string(name)
	return id, err
}

// gatedBatch bounds the identifiers of one tx_gated_among statement.
const gatedBatch = 100

// expandKeys replaces the marker {keys} in q with n key conditions on
// (kind, ns, name), joined by OR, their bind variables numbered from 1
// for $N styles.
func expandKeys(q string, numbered bool, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteString(" OR ")
		}
		if numbered {
			fmt.Fprintf(&sb, "(kind = $%d AND ns = $%d AND name = $%d)", 3*i+1, 3*i+2, 3*i+3)
		} else {
			sb.WriteString("(kind = ? AND ns = ? AND name = ?)")
		}
	}
	if n == 0 {
		sb.WriteString("FALSE")
	}
	return strings.ReplaceAll(q, "{keys}", sb.String())
}

// ScanTxHolds reads the rows of a backend's list of transactions' holds:
// (with withID, an id first) kind, namespace, name, mode, status, the
// transaction's name, host, pid, owner and since.
func ScanTxHolds(rows *sql.Rows, withID bool) ([]driver.LockInfo, error) {
	return ScanAll(rows, func(sc Scanner) (driver.LockInfo, error) { return scanTxHold(sc, withID) })
}

// scanTxHold reads one row of ScanTxHolds.
func scanTxHold(sc Scanner, withID bool) (driver.LockInfo, error) {
	var li driver.LockInfo
	var ns, name []byte
	var since int64
	dest := []any{&li.Kind, &ns, &name, &li.Mode, &li.Status, &li.SessionID, &li.Host, &li.PID, &li.Owner, &since}
	if withID {
		dest = append([]any{&li.ID}, dest...)
	}
	if err := sc.Scan(dest...); err != nil {
		return li, err
	}
	li.NS, li.Name = string(ns), string(name)
	li.CreatedAt = time.UnixMicro(since)
	li.GrantedAt = li.CreatedAt
	return li, nil
}

// Caller is the transaction as a driver.CallerTx: the conformance suite's
// stand-in for a program's own transaction.
func (t *Tx) Caller() driver.CallerTx { return callerTx{t.Tx} }

type callerTx struct{ tx *sql.Tx }

func (c callerTx) Exec(ctx context.Context, query string, args ...any) error {
	_, err := c.tx.ExecContext(ctx, query, args...)
	return err
}

func (c callerTx) ScanRow(ctx context.Context, query string, args []any, dest ...any) error {
	return c.tx.QueryRowContext(ctx, query, args...).Scan(dest...)
}

// LockTurnstileWaiting implements driver.Locks for the dialects whose
// turnstile waits are rows of {p}lock_waits (the turnstile_wait_mark
// and turnstile_wait_unmark queries).
func (db *DB) LockTurnstileWaiting(ctx context.Context, p driver.FastAcquireParams, on bool) error {
	if !on {
		_, err := db.ExecNamed(ctx, nil, "turnstile_wait_unmark", p.SessionID, p.CallID)
		return err
	}
	_, err := db.ExecNamed(ctx, nil, "turnstile_wait_mark", p.SessionID, p.CallID, HolderID(), p.ClientID,
		p.Kind, b(p.NS), b(p.Name))
	return err
}
