package sqlite

import (
	"context"
	"sync"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

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
