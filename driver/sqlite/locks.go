package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"modernc.org/sqlite"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/maintain"
)

// Locks implements driver.Driver: the driver itself.
func (d *Driver) Locks() driver.Locks { return d }

// AcquiresMany implements driver.Locks: no statement takes several names
// at once.
func (d *Driver) AcquiresMany() bool { return false }

// RemovesInOneCall implements driver.Locks: the engine withdraws in its
// transaction.
func (d *Driver) RemovesInOneCall() bool { return false }

// ReleasesInTx implements driver.Locks: a release that hands on runs in
// the engine's transaction, one commit.
func (d *Driver) ReleasesInTx() bool { return true }

// AdoptsHolders implements driver.Locks: no call moves another session's
// inline holder.
func (d *Driver) AdoptsHolders() bool { return false }

// LockRequestStatusesGated implements driver.Locks: SQLite's gate is the
// write lock, so no identifier is ever found gated.
func (d *Driver) LockRequestStatusesGated(ctx context.Context, ids []int64) (map[int64]driver.Request, []driver.Ident, error) {
	st, err := d.LockRequestStatuses(ctx, ids)
	return st, nil, err
}

// LockRequestStatuses implements driver.Driver on a connection of its own
// (d.reader) where the database is a file. On the main connection every
// read of a woken waiter queued behind the lock traffic it was waiting
// for (a fifth of 8-way contention's time); in WAL mode a reader neither
// waits for the writer nor blocks it, and sees every commit made before
// its read began.
//
// The ids go as one JSON array (request_statuses_json), so that the
// statement is prepared once instead of parsed for every list: a status
// read follows every commit of another client of the file.
func (d *Driver) LockRequestStatuses(ctx context.Context, ids []int64) (map[int64]driver.Request, error) {
	out := make(map[int64]driver.Request, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	db := d.reader.get(d)
	if db == nil {
		db = d.DB
	}
	list := make([]byte, 0, 2+8*len(ids))
	list = append(list, '[')
	for i, id := range ids {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, id, 10)
	}
	rows, err := db.QueryNamed(ctx, nil, "request_statuses_json", string(append(list, ']')))
	if err != nil {
		return nil, err
	}
	rs, err := sqlbase.ScanRequests(rows)
	if err != nil {
		return nil, fmt.Errorf("request_statuses_json: %w", err)
	}
	for _, r := range rs {
		out[r.ID] = r
	}
	return out, nil
}

// LockFastAcquire implements driver.Driver in one autocommit statement
// on a free identifier: the instance becomes its inline holder. A reader beside other readers takes a request row with
// a second statement; a writer refused by the first needs the slow path.
func (d *Driver) LockFastAcquire(ctx context.Context, p driver.FastAcquireParams) (driver.Request, bool, error) {
	leave, err := d.hub.writers.Enter(ctx)
	if err != nil {
		return driver.Request{}, false, err
	}
	defer leave()
	r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident, Mode: p.Mode,
		Status: driver.StatusGranted, CallID: p.CallID, Inline: true}
	// The mode as a plain string: database/sql converts a named string
	// type by reflection.
	args := []any{p.SessionID, p.ClientID, p.Kind, []byte(p.NS), []byte(p.Name), string(p.Mode), p.CallID}
	// shared is the reader's request row beside granted readers.
	shared := func() error {
		err := d.quickly(ctx, nil, func(ctx context.Context, db *sqlbase.DB) error {
			return db.RowNamed(ctx, nil, "fast_acquire_shared", args...).Scan(&r.ID, &r.Token)
		})
		if err == nil {
			r.Inline = false
			d.joined.Add(p.Ident)
		} else {
			d.joined.Remove(p.Ident)
		}
		return err
	}
	joining := p.Mode == driver.ModeRead && d.joined.Has(p.Ident)
	if joining {
		switch err = shared(); {
		case err == nil:
			return r, true, nil
		case !errors.Is(err, sql.ErrNoRows):
			return driver.Request{}, false, fmt.Errorf("fast_acquire: %w", err)
		}
	}
	inline := append(args, sqlbase.HolderID())
	err = d.quickly(ctx, nil, func(ctx context.Context, db *sqlbase.DB) error {
		return db.RowNamed(ctx, nil, "fast_acquire", inline...).Scan(&r.ID, &r.Token)
	})
	if errors.Is(err, sql.ErrNoRows) && p.Mode == driver.ModeRead && !joining {
		err = shared()
	}
	if errors.Is(err, sql.ErrNoRows) {
		return driver.Request{}, false, nil
	}
	if err != nil {
		return driver.Request{}, false, fmt.Errorf("fast_acquire: %w", err)
	}
	return r, true, nil
}

// adopt is the dialect's Adopt hook: in the transaction that is about to
// change the identifier's requests, its inline holder becomes a request
// row under the same id, so the slow path sees only request rows. The
// counters and the fence (st) stay as they are: they counted it already.
func (d *Driver) adopt(ctx context.Context, t *sqlbase.Tx, st *driver.IdentState) error {
	if st.Readers == 0 && st.Writers == 0 {
		return nil // nothing granted, so no inline holder
	}
	return d.adoptIdent(ctx, t.Tx, st.Ident)
}

// adoptIdent moves id's inline holder, if any, into a request row in tx.
func (d *Driver) adoptIdent(ctx context.Context, tx *sql.Tx, id driver.Ident) error {
	args := []any{id.Kind, []byte(id.NS), []byte(id.Name)}
	res, err := d.ExecNamed(ctx, tx, "inline_adopt", args...)
	if err != nil {
		return fmt.Errorf("inline_adopt: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	if _, err := d.ExecNamed(ctx, tx, "inline_clear", args...); err != nil {
		return fmt.Errorf("inline_clear: %w", err)
	}
	return nil
}

// LockFastRelease implements driver.Driver: one autocommit statement when
// every instance it releases is an inline holder or every one a request
// row, see release. The session's turnstiles in scope go after it, once
// the release is committed: a contender woken by one finds the lock free.
func (d *Driver) LockFastRelease(ctx context.Context, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	defer d.letGo(p.SessionID, driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.Name})
	if p.Limit > 0 && !p.InlineOnly {
		return d.releaseNewest(ctx, nil, p) // a transaction: it enters the gate itself
	}
	leave, err := d.hub.writers.Enter(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer leave()
	return d.release(ctx, nil, p)
}

// LockReleaseTx implements driver.Locks: the same statements in the
// engine's transaction.
func (d *Driver) LockReleaseTx(ctx context.Context, tx driver.Tx, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	t, ok := tx.(*sqlbase.Tx)
	if !ok {
		return 0, nil, fmt.Errorf("sqlite: LockReleaseTx: a transaction of another driver (%T)", tx)
	}
	return d.release(ctx, t, p)
}

// release releases in t (nil: autocommit statements) the session's
// instances p names: its inline holders (release_inline) and its granted
// request rows (fast_release), one statement when the first finds only
// one kind: the inline holders first where the engine knows the session
// never waited there (p.InlineOnly), the request rows first otherwise.
// Each statement says whether the other kind is there too. Autocommit,
// another call's Adopt may move an inline holder into a request row
// between the two statements; a request row statement after the
// inline one catches it (once the inline holders are let go there is
// nothing left to move), so the rows go last whenever in doubt. A
// release of the newest few instances of a name (p.Limit) that may find
// request rows moves the inline holder among them first, in one
// transaction (releaseNewest).
func (d *Driver) release(ctx context.Context, t *sqlbase.Tx, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	if p.Limit > 0 && !p.InlineOnly {
		return d.releaseNewest(ctx, t, p)
	}
	var tx *sql.Tx
	if t != nil {
		tx = t.Tx
	}
	n, waiting := 0, []driver.Ident(nil)
	if !p.InlineOnly {
		m, w, inline, err := d.releaseRows(ctx, tx, p)
		if err != nil || m > 0 && inline == 0 {
			return m, w, err
		}
		n, waiting = m, w
	}
	m, w, more, err := d.releaseInline(ctx, tx, p)
	n, waiting = n+m, append(waiting, w...)
	switch {
	case err != nil:
		return 0, nil, err
	case m > 0 && !more, p.Limit > 0 && m >= p.Limit:
		return n, waiting, nil
	case p.Limit > 0:
		p.Limit -= m
	}
	m, w, _, err = d.releaseRows(ctx, tx, p)
	return n + m, append(waiting, w...), err
}

// releaseInline lets the session's inline holders p names go, in one
// statement in tx (nil: autocommit): how many, the identifiers with
// waiters, and whether the session has granted request rows in scope
// too.
func (d *Driver) releaseInline(ctx context.Context, tx *sql.Tx, p driver.FastReleaseParams) (int, []driver.Ident, bool, error) {
	var n int
	var waiting []driver.Ident
	var more bool
	name, args := "release_inline_name", []any{p.SessionID, p.Kind, []byte(p.NS), []byte(p.Name)}
	if p.Name == "" {
		name, args = "release_inline_ns", args[:3]
	}
	err := d.quickRows(ctx, tx, func(rows *sql.Rows) (err error) {
		n, waiting, more, err = scanInline(rows, p)
		return err
	}, name, args...)
	if err != nil {
		return 0, nil, false, fmt.Errorf("release_inline: %w", err)
	}
	return n, waiting, more, nil
}

// scanInline reads release_inline's rows and closes them: how many inline
// holders it let go, the identifiers with waiters, and whether the session
// has granted request rows in scope too.
func scanInline(rows *sql.Rows, p driver.FastReleaseParams) (int, []driver.Ident, bool, error) {
	defer rows.Close()
	n := 0
	more := false
	var waiting []driver.Ident
	for rows.Next() {
		var name []byte
		var np int64
		var has bool
		if err := rows.Scan(&name, &np, &has); err != nil {
			return 0, nil, false, err
		}
		n++
		more = more || has
		if np > 0 {
			waiting = append(waiting, driver.Ident{Kind: p.Kind, NS: p.NS, Name: string(name)})
		}
	}
	return n, waiting, more, rows.Err()
}

// releaseNewest releases the newest p.Limit instances of a name in t (nil:
// a transaction of its own): the inline holder moved among the request
// rows first (adopt), then the newest deleted.
func (d *Driver) releaseNewest(ctx context.Context, t *sqlbase.Tx, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	if t != nil {
		if err := d.adoptIdent(ctx, t.Tx, driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.Name}); err != nil {
			return 0, nil, err
		}
		n, waiting, _, err := d.releaseRows(ctx, t.Tx, p)
		return n, waiting, err
	}
	t, err := d.BeginTx(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer t.Rollback()
	n, waiting, err := d.releaseNewest(ctx, t, p)
	if err != nil {
		return 0, nil, err
	}
	if err := t.Commit(); err != nil {
		return 0, nil, err
	}
	return n, waiting, nil
}

// releaseRows deletes the session's granted request rows p names in tx
// (nil: autocommit), in one statement: how many, the identifiers with
// waiters, and how many inline holders the session has in scope (0 when
// it deleted nothing: the statement then returns no row to say it).
func (d *Driver) releaseRows(ctx context.Context, tx *sql.Tx, p driver.FastReleaseParams) (int, []driver.Ident, int64, error) {
	var n int
	var waiting []driver.Ident
	var inline int64
	name, args := "fast_release_name", []any{p.SessionID, p.Kind, []byte(p.NS), sqlbase.ReleaseLimit(p), []byte(p.Name)}
	if p.Name == "" {
		name, args = "fast_release_ns", args[:4]
	}
	err := d.quickRows(ctx, tx, func(rows *sql.Rows) (err error) {
		n, waiting, inline, err = scanReleased(rows)
		return err
	}, name, args...)
	if err != nil {
		return 0, nil, 0, err
	}
	return n, waiting, inline, nil
}

// quickRows runs the named query through quickly and hands its rows to
// scan, which closes them.
func (d *Driver) quickRows(ctx context.Context, tx *sql.Tx, scan func(*sql.Rows) error, name string, args ...any) error {
	return d.quickly(ctx, tx, func(ctx context.Context, db *sqlbase.DB) error {
		rows, err := db.QueryNamed(ctx, tx, name, args...)
		if err != nil {
			return err
		}
		return scan(rows)
	})
}

// quickly runs f, one statement of the lock fast paths, in tx when tx is
// not nil and otherwise as an autocommit statement on the hot connection
// (no busy timeout once open), in ctx without its end, through
// untilFree. A context that can end costs every statement two goroutines,
// database/sql's and the SQLite driver's, that watch it, and their
// wake-ups: a fifth to a third of an uncontended lock-and-release pair on
// this file (docs/benchmarks.md, "SQLite: the uncontended statements
// without a watcher"). The call's end still bounds what may wait: the
// gate of this process's writers (entered in ctx), and untilFree's tries
// while another process holds the write lock. An in-memory database has
// no hot connection: f runs on the main one, in ctx.
func (d *Driver) quickly(ctx context.Context, tx *sql.Tx, f func(ctx context.Context, db *sqlbase.DB) error) error {
	if tx == nil {
		if db := d.hot.get(d); db != nil {
			quiet := context.WithoutCancel(ctx)
			return d.untilFree(ctx, func() error { return f(quiet, db) })
		}
	}
	return f(ctx, d.DB)
}

// untilFree runs f, one autocommit statement on a connection with no busy
// timeout, and again every millisecond while it fails with SQLITE_BUSY
// (another process's write lock: it wrote nothing), until ctx ends (its
// error) or the busy timeout has passed (SQLITE_BUSY). SQLite's own busy
// handler sleeps 1, 2, 5, 10 ... up to 100 ms between tries: a writer of
// another process that writes back to back left a statement a handful of
// tries in a second.
func (d *Driver) untilFree(ctx context.Context, f func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	end := time.Now().Add(busyTimeout)
	for {
		err := f()
		if !d.flavor.IsRetryable(err) || time.Now().After(end) {
			return err
		}
		t := time.NewTimer(time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// scanReleased reads fast_release's rows, one per released instance with
// its identifier's waiting count and the session's inline holders in
// scope, and closes them: how many instances it released, the
// identifiers with waiters, and the inline holders.
func scanReleased(rows *sql.Rows) (int, []driver.Ident, int64, error) {
	defer rows.Close()
	n := 0
	var inline int64
	seen := map[driver.Ident]bool{}
	var waiting []driver.Ident
	for rows.Next() {
		var id driver.Ident
		var ns, name []byte
		var np sql.NullInt64
		if err := rows.Scan(&id.Kind, &ns, &name, &np, &inline); err != nil {
			return 0, nil, 0, err
		}
		n++
		id.NS, id.Name = string(ns), string(name)
		if np.Int64 > 0 && !seen[id] {
			seen[id] = true
			waiting = append(waiting, id)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, 0, err
	}
	return n, waiting, inline, nil
}

// Turnstiles (driver.Turnstiles) in the process: the sessions of one
// process that meet a contended write lock on a file wait for it on a Go
// channel, the identifier's turnstile, that the lock's holder in this
// process keeps while it holds it, and are woken by its release, with no
// request row, no status read and no wake-up through the file. Sessions of
// other processes are not behind it: they wait in the table, whose
// waiters go first (the fast path refuses a turnstile's holder while the
// table has a waiter; it then waits there too, keeping the turnstile).
// As on the servers' backends a turnstile decides nothing: a contender
// behind it waits at most the bound the engine gives, and the lock is
// still granted by the fast path's rule.

// turnstileKey is a turnstile: the table prefix and the identifier (one
// file may hold several prefixes' tables).
type turnstileKey struct {
	prefix string
	id     driver.Ident
}

// turnstile is one identifier's: held holds a value while a session of
// this process has it; refs counts its holder and its waiters, and the
// entry goes when it falls to zero.
type turnstile struct {
	held chan struct{}
	refs int
}

// turnstiles are a file's turnstiles in this process (its hub's).
type turnstiles struct {
	mu sync.Mutex
	m  map[turnstileKey]*turnstile
}

// take takes k's turnstile, waiting at most wait for it (0: only if it is
// free) and while ctx lasts: got, it is the caller's; waited, another
// session had it when asked for.
func (ts *turnstiles) take(ctx context.Context, k turnstileKey, wait time.Duration) (got, waited bool, err error) {
	ts.mu.Lock()
	if ts.m == nil {
		ts.m = map[turnstileKey]*turnstile{}
	}
	t := ts.m[k]
	if t == nil {
		t = &turnstile{held: make(chan struct{}, 1)}
		ts.m[k] = t
	}
	t.refs++
	ts.mu.Unlock()
	select {
	case t.held <- struct{}{}:
		return true, false, nil
	default:
	}
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case t.held <- struct{}{}: // blocked senders go in the order they came
			return true, true, nil
		case <-timer.C:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	ts.unref(k, t)
	return false, true, err
}

// give lets k's turnstile go (its holder's call).
func (ts *turnstiles) give(k turnstileKey) {
	ts.mu.Lock()
	t := ts.m[k]
	ts.mu.Unlock()
	if t == nil {
		return // never taken: nothing to give
	}
	select {
	case <-t.held:
		ts.unref(k, t)
	default:
	}
}

// unref drops one reference to k's turnstile t.
func (ts *turnstiles) unref(k turnstileKey, t *turnstile) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t.refs--; t.refs == 0 && ts.m[k] == t {
		delete(ts.m, k)
	}
}

// newLines makes the driver's lines: a session's bookkeeping only (the
// turnstiles it holds; lines.Set's one call at a time), with no
// connection, in any number; a closing line gives its turnstiles back.
func (d *Driver) newLines() *sqlbase.Lines[struct{}] {
	return &sqlbase.Lines[struct{}]{
		Open:  func(context.Context) (struct{}, error) { return struct{}{}, nil },
		Close: func(context.Context, struct{}) {},
		Max:   1 << 30,
		LetGo: func(ids []driver.Ident) {
			for _, id := range ids {
				d.hub.turnstiles.give(d.turnstileKey(id))
			}
		},
	}
}

// turnstileKey is id's turnstile for the driver's prefix.
func (d *Driver) turnstileKey(id driver.Ident) turnstileKey {
	return turnstileKey{prefix: d.prefix, id: id}
}

// LockTurnstileAcquire implements driver.Locks: the turnstile (taken
// at once when free, else waited for), then the fast path's grant.
func (d *Driver) LockTurnstileAcquire(ctx context.Context, p driver.FastAcquireParams, wait time.Duration) (driver.Request, bool, bool, bool, error) {
	l, wait := d.lines.Claim(ctx, p, wait)
	if l == nil {
		return driver.Request{}, false, false, false, nil
	}
	defer l.Unlock()
	got, waited, err := d.hub.turnstiles.take(ctx, d.turnstileKey(p.Ident), wait)
	if !got {
		return driver.Request{}, false, waited, true, err
	}
	l.Held[p.Ident] = true
	r, ok, err := d.LockFastAcquire(ctx, p)
	if err != nil {
		d.giveTaken(l, p.Ident)
		return driver.Request{}, false, waited, true, err
	}
	// Refused (the table has waiters, or a session of another process
	// holds it): the session keeps the turnstile while it waits there.
	return r, ok, waited, true, nil
}

// LockTurnstileDrop implements driver.Locks.
func (d *Driver) LockTurnstileDrop(_ context.Context, sessionID string, id driver.Ident) {
	d.letGo(sessionID, id)
}

// LockTurnstileEnd implements driver.Locks.
func (d *Driver) LockTurnstileEnd(sessionID string) { d.lines.End(sessionID) }

// LockTurnstileHeld implements driver.Locks.
func (d *Driver) LockTurnstileHeld(sessionID string, scope driver.Ident) bool {
	return d.lines.Holds(sessionID, scope)
}

// letGo gives back the session's turnstiles in scope (its Name empty: the
// whole namespace), if it holds any.
func (d *Driver) letGo(sessionID string, scope driver.Ident) {
	l := d.lines.Find(sessionID)
	if l == nil {
		return
	}
	l.Lock()
	defer l.Unlock()
	d.giveTaken(l, scope)
}

// giveTaken gives back the turnstiles in scope that line l holds (its
// lock held).
func (d *Driver) giveTaken(l *sqlbase.Line[struct{}], scope driver.Ident) {
	for _, id := range l.Take(scope) {
		d.hub.turnstiles.give(d.turnstileKey(id))
	}
}

// TxGateChecks implements driver.Locks: always: the transaction holding the write lock sees the latest state.
func (d *Driver) TxGateChecks() bool { return true }

// TxGateSerial implements driver.Locks: on SQLite a transaction's gate
// is the database's write lock, which excludes every other writer (and
// every session's grant) until the transaction ends; nobody else can see
// inside it, so no identifier is gated and nothing is recorded.
func (d *Driver) TxGateSerial() bool { return true }

// sqliteBusySnapshot is SQLITE_BUSY_SNAPSHOT: the transaction read a
// snapshot older than the database; it can never write.
const sqliteBusySnapshot = 517

// TxGate implements driver.Locks: a write in the caller's transaction
// takes the write lock (see takeWriteLock); then, in the same
// transaction, which now sees the latest state, the sessions' instances
// (always: no session could release while the transaction holds it).
func (d *Driver) TxGate(ctx context.Context, tx driver.CallerTx, id driver.Ident, mode driver.LockMode, wait time.Duration, _ bool) (bool, error) {
	if err := d.takeWriteLock(ctx, tx, wait); err != nil {
		return false, err
	}
	var n int
	if err := tx.ScanRow(ctx, d.Q("tx_gate_sessions"), []any{id.Kind, []byte(id.NS), []byte(id.Name), mode}, &n); err != nil {
		return false, fmt.Errorf("tx_gate_sessions: %w", err)
	}
	if n > 0 {
		return false, driver.ErrGateSession
	}
	return true, nil
}

// TxPrepare implements driver.Locks: nothing to ready.
func (d *Driver) TxPrepare(context.Context, driver.Ident) error { return nil }

// takeWriteLock writes in the caller's transaction, again while another
// writer has the write lock, until wait has passed.
func (d *Driver) takeWriteLock(ctx context.Context, tx driver.CallerTx, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for pause := 100 * time.Microsecond; ; pause = min(2*pause, 10*time.Millisecond) {
		err := d.writeLockErr(tx.Exec(ctx, d.Q("tx_gate")))
		switch {
		case !errors.Is(err, errBusy):
			return err
		case wait >= 0 && time.Now().Add(pause).After(deadline):
			return driver.ErrGateBusy
		case !maintain.Sleep(ctx, pause):
			return ctx.Err()
		}
	}
}

// errBusy is writeLockErr's answer to a write that another writer's lock
// kept out: try again.
var errBusy = errors.New("the write lock is busy")

// writeLockErr is what a write to take the write lock says: nil when it
// took it, errBusy when another writer has it, else the error to return.
func (d *Driver) writeLockErr(err error) error {
	var se *sqlite.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && se.Code() == sqliteBusySnapshot:
		return fmt.Errorf("tx_gate: the transaction read the database before another connection wrote to it, so it cannot take the write lock; begin it with BEGIN IMMEDIATE (the _txlock=immediate connection option) or take the lock first: %w", err)
	case !d.flavor.IsRetryable(err):
		return fmt.Errorf("tx_gate: %w", err)
	}
	return errBusy
}

// TxGateHeld implements driver.Locks: never gated.
func (d *Driver) TxGateHeld(context.Context, driver.Tx, driver.Ident) (driver.LockMode, error) {
	return "", nil
}

// TxGatedAmong implements driver.Locks: never gated.
func (d *Driver) TxGatedAmong(context.Context, []driver.Ident) ([]driver.Ident, error) {
	return nil, nil
}

// TxHoldCaller implements driver.Locks: nothing is recorded.
func (d *Driver) TxHoldCaller(context.Context, driver.CallerTx, driver.TxHold) error { return nil }

// TxHolds implements driver.Locks: nothing is recorded.
func (d *Driver) TxHolds(context.Context) ([]driver.LockInfo, error) { return nil, nil }
