package postgres

import (
	"context"
	"errors"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/stmtbound"
)

// Turnstiles (driver.Turnstiles): a session that meets a
// contended write lock waits for it in the server, on a connection of its
// own (its line, sqlbase.Lines), in the lock queue of a session-level
// advisory lock on the identifier that the lock's holder keeps while it
// holds it.

// LockTurnstileWaiting comes from the embedded sqlbase.DB (lock_waits).
// maxLines bounds the lines open at once in one driver: past it, sessions
// wait through the table, as behind a pooler.
const maxLines = 64

// TurnstileClass is the first key of every turnstile's two-key advisory
// lock ('btn1', pg_locks' classid): the one-key locks of transaction-
// scoped gates and a program's own one-key locks never meet it.
const TurnstileClass int32 = 0x62746e31

// newLines makes the driver's lines: direct connections with the
// listener's configuration (the DSN's listen_dsn behind a pooler).
func (d *Driver) newLines() *sqlbase.Lines[*pgx.Conn] {
	return &sqlbase.Lines[*pgx.Conn]{
		Open:  func(ctx context.Context) (*pgx.Conn, error) { return connectDirect(ctx, d.listenCfg) },
		Close: func(ctx context.Context, c *pgx.Conn) { c.Close(ctx) },
		Max:   maxLines,
	}
}

// TurnstileKey is an identifier's second key (pg_locks' objid, as
// unsigned), for the table prefix: a hash of both. Two identifiers that
// share a key only share a turnstile: a contender may wait the bound for
// nothing, never more.
func TurnstileKey(prefix string, id driver.Ident) int32 {
	h := fnv.New32a()
	h.Write([]byte(prefix + "wake"))
	h.Write([]byte{byte(id.Kind), 0})
	h.Write([]byte(id.NS))
	h.Write([]byte{0})
	h.Write([]byte(id.Name))
	return int32(h.Sum32())
}

// turnstileKey is TurnstileKey for the driver's prefix.
func (d *Driver) turnstileKey(id driver.Ident) int32 {
	return TurnstileKey(d.prefix, id)
}

// LockTurnstileAcquire implements driver.Locks.
func (d *Driver) LockTurnstileAcquire(ctx context.Context, p driver.FastAcquireParams, wait time.Duration) (driver.Request, bool, bool, bool, error) {
	if d.noDirect() {
		return driver.Request{}, false, false, false, nil
	}
	l, wait := d.lines.Claim(ctx, p, wait)
	if l == nil {
		return driver.Request{}, false, false, false, nil
	}
	defer l.Unlock()
	// The line is pgx's own connection, outside the bounded pools: its
	// wait in the server (lock_timeout) plus a margin bounds it.
	ctx, cancel := d.bound.Context(stmtbound.Wait(ctx, max(wait, 0)))
	defer cancel()
	var id, token, inc *int64
	var held, waited bool
	err := l.Conn.QueryRow(ctx, d.Q("turnstile_acquire"), p.Kind, []byte(p.NS), []byte(p.Name),
		TurnstileClass, d.turnstileKey(p.Ident), int32(wait/time.Millisecond), p.SessionID, p.ClientID, p.CallID).
		Scan(&id, &token, &inc, &held, &waited)
	if lockTimedOut(err) {
		// The wait ran out: the lock was not taken, and
		// the turnstile may have come as the time ran out.
		waited = true
		err = l.Conn.QueryRow(ctx, d.Q("turnstile_held"), TurnstileClass, d.turnstileKey(p.Ident)).Scan(&held)
	}
	if err != nil {
		// The turnstile may be held or not (a statement cut off): close
		// the line, which lets it go either way.
		l.Fail()
		return driver.Request{}, false, false, false, err
	}
	if held {
		l.Held[p.Ident] = true
	}
	if id == nil {
		return driver.Request{}, false, waited, true, nil
	}
	r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident, Mode: p.Mode,
		Status: driver.StatusGranted, CallID: p.CallID, Inline: true, ID: *id, Token: *token}
	if stale(p.Incarnation, inc) {
		return r, false, waited, true, driver.ErrServerRestarted
	}
	return r, true, waited, true, nil
}

// lockTimedOut reports PostgreSQL's lock_not_available (55P03), which a
// wait behind a turnstile that ran out raises.
func lockTimedOut(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// LockTurnstileDrop implements driver.Locks.
func (d *Driver) LockTurnstileDrop(ctx context.Context, sessionID string, id driver.Ident) {
	l := d.lines.Find(sessionID)
	if l == nil {
		return
	}
	l.Lock()
	defer l.Unlock()
	if ids := l.Take(id); len(ids) > 0 {
		_ = d.sendOnLine(ctx, l, &pgx.Batch{}, ids, nil)
	}
}

// LockTurnstileHeld implements driver.Locks.
func (d *Driver) LockTurnstileHeld(sessionID string, scope driver.Ident) bool {
	return d.lines.Holds(sessionID, scope)
}

// LockTurnstileEnd implements driver.Locks.
func (d *Driver) LockTurnstileEnd(sessionID string) { d.lines.End(sessionID) }

// sendOnLine runs b on the line, its first statement's rows read by first
// (when given), then the unlocks of ids, which must each find their
// turnstile held: one that does not means the line does not keep its
// server session (a transaction pooler in between), and turnstiles are
// turned off for good. On an error the line is closed. Called with the
// line held.
func (d *Driver) sendOnLine(ctx context.Context, l *sqlbase.Line[*pgx.Conn], b *pgx.Batch, ids []driver.Ident, first func(pgx.Rows) error) error {
	n := b.Len()
	for _, id := range ids {
		b.Queue("SELECT pg_advisory_unlock($1, $2)", TurnstileClass, d.turnstileKey(id))
	}
	ctx, cancel := d.bound.Context(ctx) // pgx's own connection: bounded here
	defer cancel()
	br := l.Conn.SendBatch(ctx, b)
	var err error
	if first != nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			err = first(rows)
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
	}
	for i := n; err == nil && i < b.Len(); i++ {
		var ok bool
		if err = br.QueryRow().Scan(&ok); err == nil && !ok && d.lines.TurnOff() {
			d.Logger().Warn("baton: PostgreSQL: a turnstile was not held where it was taken (a transaction pooler between baton and the server?): contended locks wait through the table only from now on; give listen_dsn a direct DSN")
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		l.Fail()
	}
	return err
}

// releaseOnLine is LockFastRelease's statement run on the session's line
// together with the unlock of the turnstiles it releases, in one round
// trip; ok false when the session holds no such turnstile (the statement
// was not run).
func (d *Driver) releaseOnLine(ctx context.Context, p driver.FastReleaseParams, query string, args []any, scan func(pgx.Rows) error) (bool, error) {
	l := d.lines.Find(p.SessionID)
	if l == nil {
		return false, nil
	}
	l.Lock()
	defer l.Unlock()
	ids := l.Take(driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.Name})
	if len(ids) == 0 || !l.Open() {
		return false, nil
	}
	b := &pgx.Batch{}
	b.Queue(d.Q(query), args...)
	// The unlocks run before the release commits: a contender woken by
	// one waits, in its upsert, for that commit and decides on the row it
	// wrote.
	return true, d.sendOnLine(ctx, l, b, ids, scan)
}
