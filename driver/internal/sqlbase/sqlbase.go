package sqlbase

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
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
		return t.execText(ctx, name, t.db.Q(name), args...)
	}
	return t.db.ExecNamed(ctx, t.Tx, name, args...)
}

// execText runs q, the text of the named statement name with its lists
// expanded, in the transaction, the caller's or on the pool for a NoTx.
func (t *Tx) execText(ctx context.Context, name, q string, args ...any) (sql.Result, error) {
	var r sql.Result
	var err error
	if t.caller != nil {
		r, err = t.caller.ExecContext(ctx, q, args...)
	} else {
		r, err = t.q().ExecContext(ctx, q, args...)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
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

func b(s string) []byte { return []byte(s) }

func us(d time.Duration) int64 { return d.Microseconds() }

// FromMicros converts stored microseconds to a time.
func FromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v)
}

func (t *Tx) strings(ctx context.Context, name string, args ...any) ([]string, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, name, args...)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, ScanString)
}

// IsRetryable implements driver.Driver.
func (db *DB) IsRetryable(err error) bool {
	return err != nil && db.D.IsRetryable != nil && db.D.IsRetryable(err)
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
