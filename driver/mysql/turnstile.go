package mysql

import (
	"context"
	"database/sql"
	sqldrv "database/sql/driver"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// Turnstiles (driver.Turnstiles): a session that meets a contended write
// lock waits for it in the server, on a connection of its own (its line,
// sqlbase.Lines), in GET_LOCK's queue for a named lock on the identifier
// that the lock's holder keeps while it holds it. The lock itself is the
// fast path's (lock_fast), granted after the turnstile by the same rule.

// LockTurnstileWaiting comes from the embedded sqlbase.DB (lock_waits).
// maxLines bounds the lines open at once in one driver: past it, sessions
// wait through the table.
const maxLines = 64

// newLines makes the driver's lines on a pool of their own (autocommit),
// whose connections are discarded, never reused, when a line closes: a
// connection's named locks go with it.
func (d *Driver) newLines(db *sql.DB) *sqlbase.Lines[*sql.Conn] {
	db.SetMaxOpenConns(maxLines)
	db.SetMaxIdleConns(0)
	return &sqlbase.Lines[*sql.Conn]{
		Open: func(ctx context.Context) (*sql.Conn, error) { return db.Conn(ctx) },
		Close: func(_ context.Context, c *sql.Conn) {
			_ = c.Raw(func(any) error { return sqldrv.ErrBadConn })
			_ = c.Close()
		},
		Max: maxLines,
	}
}

// TurnstileName is an identifier's turnstile in a database for a table
// prefix: "baton_t" and a hash of the three (named locks are the
// server's, not a database's). Two identifiers that share one only share
// a turnstile: a contender may wait the bound for nothing, never more.
func TurnstileName(database, prefix string, id driver.Ident) string {
	h := fnv.New64a()
	for _, s := range []string{database, prefix, strconv.Itoa(id.Kind), id.NS, id.Name} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("baton_t%016x", h.Sum64())
}

// turnstileName is TurnstileName for the driver's database and prefix.
func (d *Driver) turnstileName(id driver.Ident) string { return TurnstileName(d.dbName, d.prefix, id) }

// TurnstileCallPattern matches (SQL LIKE) the text of the call that takes
// a turnstile, as information_schema.PROCESSLIST shows it while the call
// waits in GET_LOCK (state 'User lock').
const TurnstileCallPattern = "CALL %turnstile_acquire(%"

// lineTurnstile is the turnstile among held that a release of scope (a
// name, or a namespace when its Name is empty) lets go in its call:
// scope's own, or the only one held in the namespace.
func lineTurnstile(held map[driver.Ident]bool, scope driver.Ident) (driver.Ident, bool) {
	if scope.Name != "" {
		return scope, held[scope]
	}
	var one driver.Ident
	n := 0
	for id := range held {
		if id.Within(scope) {
			one, n = id, n+1
		}
	}
	return one, n == 1
}

// LockTurnstileAcquire implements driver.Locks: the turnstile
// (taken at once when free, else waited for) and then the fast path's
// grant, in one call on the line ({p}turnstile_acquire).
func (d *Driver) LockTurnstileAcquire(ctx context.Context, p driver.FastAcquireParams, wait time.Duration) (driver.Request, bool, bool, bool, error) {
	l, wait := d.lines.Claim(ctx, p, wait)
	if l == nil {
		return driver.Request{}, false, false, false, nil
	}
	defer l.Unlock()
	name := d.turnstileName(p.Ident)
	r := fastHolder(p)
	// The turnstile: 1 free and taken, 2 taken after a wait, 0 not
	// within wait; then the rows fast_acquire changed and the fence.
	var got sql.NullInt64
	var n int64
	// A context that cannot end, as the hot pool's statements (Driver.hot):
	// the line's read and write timeouts bound the call, whose wait in
	// GET_LOCK the engine has cut to end before the lock call does.
	err := l.Conn.QueryRowContext(context.WithoutCancel(ctx), d.Q("turnstile_acquire"), name, wait.Seconds(),
		p.Kind, bin(p.NS), bin(p.Name), r.ID, p.SessionID, p.ClientID, string(p.Mode), p.CallID, p.Incarnation).
		Scan(&got, &n, &r.Token)
	if err != nil || !got.Valid {
		l.Fail()
		if err == nil {
			err = fmt.Errorf("GET_LOCK(%s) failed", name)
		}
		return driver.Request{}, false, false, false, err
	}
	waited := got.Int64 != 1
	if got.Int64 == 0 {
		return driver.Request{}, false, waited, true, nil
	}
	l.Held[p.Ident] = true
	ok := n > 0
	if !ok {
		// Refused: held, or still the slow path's (slow = 1) after a wait
		// through the table. Nothing of it left in InnoDB: the fast path
		// owns it again (the contenders behind this one wait in the
		// server, not in InnoDB), and this call takes it. Held (by
		// another session, or by this one: a re-entry), it stays
		// refused, and the engine's slow path decides.
		var demoted bool
		if demoted, err = d.demote(ctx, p.Ident); err == nil && demoted {
			r, ok, err = d.LockFastAcquire(ctx, p)
		}
	}
	if err != nil {
		l.Fail() // lets the turnstile go
		return driver.Request{}, false, waited, true, err
	}
	return r, ok, waited, true, nil
}

// LockTurnstileDrop implements driver.Locks.
func (d *Driver) LockTurnstileDrop(ctx context.Context, sessionID string, id driver.Ident) {
	d.letGo(ctx, sessionID, id)
}

// LockTurnstileEnd implements driver.Locks.
func (d *Driver) LockTurnstileEnd(sessionID string) { d.lines.End(sessionID) }

// letGo releases the session's turnstiles in scope (its Name empty: the
// whole namespace), if it holds any; on an error the line closes, which
// lets them go as well.
func (d *Driver) letGo(ctx context.Context, sessionID string, scope driver.Ident) {
	l := d.lines.Find(sessionID)
	if l == nil {
		return
	}
	l.Lock()
	defer l.Unlock()
	for _, id := range l.Take(scope) {
		if !l.Open() {
			return
		}
		if _, err := l.Conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", d.turnstileName(id)); err != nil {
			l.Fail()
		}
	}
}

// LockTurnstileHeld implements driver.Locks.
func (d *Driver) LockTurnstileHeld(sessionID string, scope driver.Ident) bool {
	return d.lines.Holds(sessionID, scope)
}

// releaseOnLine is LockFastRelease of one name whose turnstile the
// session holds, or of a namespace where it holds one turnstile: the fast
// release and RELEASE_LOCK in one call on the line ({p}turnstile_release,
// {p}turnstile_release_ns), then what the
// slow path has left to release, if anything (releaseRest), and the
// turnstile after it when the call did not let it go. done false: the
// session holds no such turnstile (or several in the namespace), or the
// call failed (the line is closed now, which lets the turnstiles go):
// the release goes through the pool.
func (d *Driver) releaseOnLine(ctx context.Context, p driver.FastReleaseParams) (n int, waiting []driver.Ident, done bool, err error) {
	if p.Limit > 0 && p.Name == "" {
		return 0, nil, false, nil
	}
	l := d.lines.Find(p.SessionID)
	if l == nil {
		return 0, nil, false, nil
	}
	l.Lock()
	scope := driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.Name}
	id, ok := lineTurnstile(l.Held, scope)
	if !l.Open() || !ok {
		l.Unlock()
		return 0, nil, false, nil
	}
	query, args := "turnstile_release", []any{d.turnstileName(id), p.SessionID, p.Kind, bin(p.NS), bin(p.Name)}
	if p.Name == "" {
		query, args = "turnstile_release_ns", args[:4]
	}
	var n64, signal int64
	var unlocked sql.NullInt64
	err = l.Conn.QueryRowContext(context.WithoutCancel(ctx), d.Q(query), args...).Scan(&n64, &signal, &unlocked)
	if err != nil {
		l.Fail()
		l.Unlock()
		return 0, nil, false, nil
	}
	if unlocked.Valid {
		delete(l.Held, id)
	}
	l.Unlock()
	n, waiting, err = d.releaseRest(ctx, p, int(n64), signal)
	if err == nil && !unlocked.Valid {
		d.letGo(ctx, p.SessionID, scope)
	}
	return n, waiting, true, err
}
