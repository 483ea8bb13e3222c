// Package stmtbound bounds the statements of a database/sql pool that
// talks to a database server: a server that stops answering once
// connected (stopped, a network that drops packets silently, a stalled
// proxy) would otherwise hang a statement whose context has no deadline
// for ever.
//
// Connector wraps a pool's connector: every statement, prepare, session
// reset, ping and transaction of its connections whose context has no
// deadline gets one (the Bound's timeout from its start; rows are read
// and transactions committed within it). A context with a deadline is
// left alone: the caller bounded it. A statement that waits in the
// server by design (a lock wait with a server-side timeout) marks its
// context with Wait, which bounds it by that wait plus Margin instead;
// migrations mark theirs Unbounded.
package stmtbound

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// Default is the statement timeout until Bound.Set changes it.
const Default = 30 * time.Second

// Margin is added to a statement's own wait (Wait) for its round trip.
const Margin = 5 * time.Second

// ErrNoAnswer is wrapped by the error of a statement the bound cut off:
// the server did not answer in time.
var ErrNoAnswer = errors.New("no answer from the database server")

// Bound is the statement timeout of one backend's pools, and the name of
// the server they talk to, for errors.
type Bound struct {
	// Label names the server in errors ("postgres at host:5432").
	Label   string
	timeout atomic.Int64
}

// New returns a Bound of Default for the server label names.
func New(label string) *Bound {
	b := &Bound{Label: label}
	b.timeout.Store(int64(Default))
	return b
}

// Set changes the timeout: 0 restores Default, a negative one bounds
// nothing (statements then end only with their context).
func (b *Bound) Set(d time.Duration) {
	if d == 0 {
		d = Default
	}
	b.timeout.Store(int64(d))
}

// Timeout is the current timeout (negative: none).
func (b *Bound) Timeout() time.Duration { return time.Duration(b.timeout.Load()) }

type waitKey struct{}

// Wait marks ctx for statements that wait in the server up to d by
// design: a statement without a deadline is then bounded by d + Margin,
// not by the statement timeout. A negative d leaves such statements
// unbounded (Unbounded).
func Wait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, waitKey{}, d)
}

// Unbounded marks ctx for statements that may run as long as they need
// (migrations): they end only with their context.
func Unbounded(ctx context.Context) context.Context { return Wait(ctx, -1) }

// Context returns ctx bounded as one statement (or short transaction):
// ctx itself when it has a deadline, is marked Unbounded, or b bounds
// nothing (b may be nil); else ctx with the statement's deadline. cancel
// must be called when the statement is done.
func (b *Bound) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	d := b.limit(ctx)
	if d < 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// limit is how long a statement with ctx may take; negative: no bound of
// the Bound's (ctx's own deadline, if any, applies).
func (b *Bound) limit(ctx context.Context) time.Duration {
	if b == nil {
		return -1
	}
	if _, ok := ctx.Deadline(); ok {
		return -1
	}
	if w, ok := ctx.Value(waitKey{}).(time.Duration); ok {
		if w < 0 {
			return -1
		}
		return w + Margin
	}
	return b.Timeout()
}

// Err turns err, the failure of a statement run with bctx (Context's
// answer for ctx), into an error that says the server did not answer
// within the bound, when the bound is what ended it; else err.
func (b *Bound) Err(ctx, bctx context.Context, err error) error {
	if err == nil || bctx == ctx || ctx.Err() != nil || !errors.Is(bctx.Err(), context.DeadlineExceeded) {
		return err
	}
	return &TimeoutError{Label: b.Label, Bound: b.limit(ctx), Err: err}
}

// TimeoutError is a statement cut off by its bound.
type TimeoutError struct {
	Label string
	Bound time.Duration
	Err   error // the driver's error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: %v within %v (the statement timeout)", e.Label, ErrNoAnswer, e.Bound)
}

// Unwrap gives ErrNoAnswer, never the driver's context error: a caller's
// own deadline did not pass.
func (e *TimeoutError) Unwrap() error { return ErrNoAnswer }

// Connector returns c whose connections' statements are bounded by b.
// With commitByExec, a transaction ends with COMMIT or ROLLBACK run as a
// statement on the connection (bounded like any other) instead of the
// driver's Commit and Rollback, which take no context (go-sql-driver's
// would wait for a silent server for ever); use it only for a driver
// whose Commit and Rollback are just those statements.
func Connector(c driver.Connector, b *Bound, commitByExec bool) driver.Connector {
	return &connector{Connector: c, b: b, byExec: commitByExec}
}

type connector struct {
	driver.Connector
	b      *Bound
	byExec bool
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Conn: dc, c: c}, nil
}

// Unwrap returns the driver's own connection under a connection of a
// Connector (as sql.Conn.Raw hands it), or dc itself.
func Unwrap(dc any) any {
	if w, ok := dc.(*conn); ok {
		return w.Conn
	}
	return dc
}

// conn is a bounded connection. The driver's connection must implement
// the context interfaces (pgx's and go-sql-driver's do); the others are
// passed on where it has them.
type conn struct {
	driver.Conn
	c *connector
}

var (
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
)

func (w *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	bctx, cancel := w.c.b.Context(ctx)
	defer cancel()
	var st driver.Stmt
	var err error
	if p, ok := w.Conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(bctx, query)
	} else {
		st, err = w.Conn.Prepare(query)
	}
	if err != nil {
		return nil, w.c.b.Err(ctx, bctx, err)
	}
	return &stmt{Stmt: st, c: w.c, conn: w}, nil
}

func (w *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	bctx, cancel := w.c.b.Context(ctx)
	bt, ok := w.Conn.(driver.ConnBeginTx)
	if !ok {
		cancel()
		return nil, errors.New("stmtbound: the driver's connection has no BeginTx")
	}
	tx, err := bt.BeginTx(bctx, opts)
	if err != nil {
		cancel()
		return nil, w.c.b.Err(ctx, bctx, err)
	}
	return &txn{Tx: tx, w: w, ctx: ctx, bctx: bctx, cancel: cancel}, nil
}

func (w *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := w.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	bctx, cancel := w.c.b.Context(ctx)
	defer cancel()
	r, err := e.ExecContext(bctx, query, args)
	return r, w.c.b.Err(ctx, bctx, err)
}

func (w *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := w.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	bctx, cancel := w.c.b.Context(ctx)
	r, err := q.QueryContext(bctx, query, args)
	if err != nil {
		cancel()
		return nil, w.c.b.Err(ctx, bctx, err)
	}
	return &rows{Rows: r, b: w.c.b, ctx: ctx, bctx: bctx, cancel: cancel}, nil
}

func (w *conn) Ping(ctx context.Context) error {
	p, ok := w.Conn.(driver.Pinger)
	if !ok {
		return nil
	}
	bctx, cancel := w.c.b.Context(ctx)
	defer cancel()
	return w.c.b.Err(ctx, bctx, p.Ping(bctx))
}

func (w *conn) ResetSession(ctx context.Context) error {
	r, ok := w.Conn.(driver.SessionResetter)
	if !ok {
		return nil
	}
	bctx, cancel := w.c.b.Context(ctx)
	defer cancel()
	return r.ResetSession(bctx)
}

func (w *conn) IsValid() bool {
	if v, ok := w.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (w *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := w.Conn.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// txn is a transaction of a bounded connection: begun within the bound
// of its BeginTx context (bctx), which the driver may keep for its
// commit (pgx does).
type txn struct {
	driver.Tx
	w         *conn
	ctx, bctx context.Context
	cancel    context.CancelFunc
}

func (t *txn) Commit() error { return t.end("COMMIT", t.Tx.Commit) }

func (t *txn) Rollback() error { return t.end("ROLLBACK", t.Tx.Rollback) }

func (t *txn) end(stmt string, f func() error) error {
	defer t.cancel()
	if !t.w.c.byExec {
		return t.w.c.b.Err(t.ctx, t.bctx, f())
	}
	// The transaction ends even when its caller's context is done (as the
	// driver's own Commit and Rollback would), bounded as a statement
	// begun now.
	ctx := context.WithoutCancel(t.ctx)
	bctx, cancel := t.w.c.b.Context(ctx)
	defer cancel()
	_, err := t.w.Conn.(driver.ExecerContext).ExecContext(bctx, stmt, nil)
	return t.w.c.b.Err(ctx, bctx, err)
}

// stmt is a prepared statement of a bounded connection.
type stmt struct {
	driver.Stmt
	c    *connector
	conn *conn
}

var (
	_ driver.StmtExecContext   = (*stmt)(nil)
	_ driver.StmtQueryContext  = (*stmt)(nil)
	_ driver.NamedValueChecker = (*stmt)(nil)
)

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := s.Stmt.(driver.StmtExecContext)
	if !ok {
		return nil, errors.New("stmtbound: the driver's statement has no ExecContext")
	}
	bctx, cancel := s.c.b.Context(ctx)
	defer cancel()
	r, err := e.ExecContext(bctx, args)
	return r, s.c.b.Err(ctx, bctx, err)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.Stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("stmtbound: the driver's statement has no QueryContext")
	}
	bctx, cancel := s.c.b.Context(ctx)
	r, err := q.QueryContext(bctx, args)
	if err != nil {
		cancel()
		return nil, s.c.b.Err(ctx, bctx, err)
	}
	return &rows{Rows: r, b: s.c.b, ctx: ctx, bctx: bctx, cancel: cancel}, nil
}

// CheckNamedValue is the statement's checker, else its connection's (as
// database/sql would ask them: pgx's statements have none, their
// connection converts slices to arrays).
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return s.conn.CheckNamedValue(nv)
}

// rows are read within their statement's bound, which ends when they are
// closed.
type rows struct {
	driver.Rows
	b         *Bound
	ctx, bctx context.Context
	cancel    context.CancelFunc
}

func (r *rows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if err != nil && !errors.Is(err, io.EOF) {
		return r.b.Err(r.ctx, r.bctx, err)
	}
	return err
}

func (r *rows) Close() error {
	defer r.cancel()
	return r.Rows.Close()
}

func (r *rows) HasNextResultSet() bool {
	n, ok := r.Rows.(driver.RowsNextResultSet)
	return ok && n.HasNextResultSet()
}

func (r *rows) NextResultSet() error {
	if n, ok := r.Rows.(driver.RowsNextResultSet); ok {
		return n.NextResultSet()
	}
	return io.EOF
}
