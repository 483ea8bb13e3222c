package postgres

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/driver"
)

// Turnstiles (migration 027, driver.Turnstiles): a session that meets a
// contended write lock waits for it in the server, on a connection of its
// own (its line), in the lock queue of a session-level advisory lock on
// the identifier that the lock's holder keeps while it holds it.

// maxLines bounds the lines open at once in one driver: past it, sessions
// wait through the table, as behind a pooler.
const maxLines = 64

// turnstileClass is the first key of every turnstile's two-key advisory
// lock ('btn1'): the one-key locks of transaction-scoped gates and a
// program's own one-key locks never meet it.
const turnstileClass int32 = 0x62746e31

// line is a session's own connection for its turnstiles.
type line struct {
	// mu is held by the call using the connection; an acquisition that
	// finds it taken goes without a turnstile.
	mu   sync.Mutex
	conn *pgx.Conn // nil once closed
	// held are the identifiers whose turnstile the line holds.
	held map[driver.Ident]bool
}

// turnstileKey is an identifier's second key: a hash of the table prefix
// and the identifier. Two identifiers that share a key only share a
// turnstile: a contender may wait the bound for nothing, never more.
func (d *Driver) turnstileKey(id driver.Ident) int32 {
	h := fnv.New32a()
	h.Write([]byte(d.channel))
	h.Write([]byte{byte(id.Kind), 0})
	h.Write([]byte(id.NS))
	h.Write([]byte{0})
	h.Write([]byte(id.Name))
	return int32(h.Sum32())
}

// lineFor returns the session's line, connecting it when the session has
// none; nil when turnstiles are off or every line is in use.
func (d *Driver) lineFor(ctx context.Context, sessionID string) *line {
	if d.linesOff.Load() || (d.pooled && d.listenCfg == d.cfg) {
		return nil // behind a transaction pooler with no direct DSN
	}
	if v, ok := d.lines.Load(sessionID); ok {
		return v.(*line)
	}
	if time.Now().UnixNano() < d.linesAfter.Load() {
		return nil // the last connection attempt failed a moment ago
	}
	if d.lineCount.Add(1) > maxLines {
		d.lineCount.Add(-1)
		return nil
	}
	conn, err := pgx.ConnectConfig(ctx, d.listenCfg)
	if err != nil {
		d.lineCount.Add(-1)
		// The table's path stays open and reports what is wrong; no
		// call waits for a connection again for a second.
		d.linesAfter.Store(time.Now().Add(time.Second).UnixNano())
		return nil
	}
	l := &line{conn: conn, held: map[driver.Ident]bool{}}
	if v, loaded := d.lines.LoadOrStore(sessionID, l); loaded {
		d.lineCount.Add(-1)
		conn.Close(context.Background())
		return v.(*line)
	}
	return l
}

// fail closes a line whose connection erred: the server lets its
// turnstiles go with it. Called with l.mu held.
func (l *line) fail() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		l.conn.Close(ctx)
		cancel()
		l.conn = nil
	}
	clear(l.held)
}

// LockTurnstileAcquire implements driver.Turnstiles.
func (d *Driver) LockTurnstileAcquire(ctx context.Context, p driver.FastAcquireParams, wait time.Duration) (driver.Request, bool, bool, bool, bool, error) {
	l := d.lineFor(ctx, p.SessionID)
	if l == nil || p.Mode != driver.ModeWrite || !l.mu.TryLock() {
		return driver.Request{}, false, false, false, false, nil
	}
	defer l.mu.Unlock()
	if l.conn == nil || l.held[p.Ident] {
		// Closed, or the session is in there already (its next instance
		// is the table's).
		return driver.Request{}, false, false, false, false, nil
	}
	// The server's wait ends before ctx does, so that a call's own
	// timeout rarely cuts a statement off (which costs the connection).
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)-time.Millisecond)
	}
	wait = max(wait, 0) // under a millisecond: only a free turnstile
	var id, token, inc *int64
	var held, waited bool
	err := l.conn.QueryRow(ctx, d.Q("turnstile_acquire"), p.Kind, []byte(p.NS), []byte(p.Name),
		turnstileClass, d.turnstileKey(p.Ident), int32(wait/time.Millisecond), p.SessionID, p.ClientID, p.CallID).
		Scan(&id, &token, &inc, &held, &waited)
	if err != nil {
		// The turnstile may be held or not (a statement cut off): close
		// the line, which lets it go either way.
		l.fail()
		return driver.Request{}, false, false, false, false, err
	}
	if held {
		l.held[p.Ident] = true
	}
	if id == nil {
		return driver.Request{}, false, held, waited, true, nil
	}
	r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident, Mode: p.Mode,
		Status: driver.StatusGranted, CallID: p.CallID, Inline: true, ID: *id, Token: *token}
	if stale(p.Incarnation, inc) {
		return r, false, held, waited, true, driver.ErrServerRestarted
	}
	return r, true, held, waited, true, nil
}

// LockTurnstileDrop implements driver.Turnstiles.
func (d *Driver) LockTurnstileDrop(ctx context.Context, sessionID string, id driver.Ident) {
	v, ok := d.lines.Load(sessionID)
	if !ok {
		return
	}
	l := v.(*line)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held[id] {
		return
	}
	b := &pgx.Batch{}
	d.queueUnlocks(b, l, func(i driver.Ident) bool { return i == id })
	d.sendOnLine(ctx, l, b, nil)
}

// LockTurnstileEnd implements driver.Turnstiles.
func (d *Driver) LockTurnstileEnd(sessionID string) {
	v, ok := d.lines.LoadAndDelete(sessionID)
	if !ok {
		return
	}
	l := v.(*line)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fail()
	d.lineCount.Add(-1)
}

// closeLines closes every line (the driver closes).
func (d *Driver) closeLines() {
	d.lines.Range(func(k, _ any) bool {
		d.LockTurnstileEnd(k.(string))
		return true
	})
}

// queueUnlocks adds to b the unlock of each turnstile the line holds that
// match selects, and forgets them. Called with l.mu held.
func (d *Driver) queueUnlocks(b *pgx.Batch, l *line, match func(driver.Ident) bool) {
	for id := range l.held {
		if match(id) {
			b.Queue("SELECT pg_advisory_unlock($1, $2)", turnstileClass, d.turnstileKey(id))
			delete(l.held, id)
		}
	}
}

// sendOnLine runs b on the line, its first statement's rows read by first
// (when given), the rest being unlocks, which must each find their
// turnstile held: one that does not means the line does not keep its
// server session (a transaction pooler in between), and turnstiles are
// turned off for good. On an error the line is closed. Called with l.mu
// held.
func (d *Driver) sendOnLine(ctx context.Context, l *line, b *pgx.Batch, first func(pgx.Rows) error) error {
	if l.conn == nil {
		return nil
	}
	br := l.conn.SendBatch(ctx, b)
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
	for i := 1; err == nil && i < b.Len(); i++ {
		var ok bool
		if err = br.QueryRow().Scan(&ok); err == nil && !ok {
			if d.linesOff.CompareAndSwap(false, true) {
				slog.Warn("baton: PostgreSQL: a turnstile was not held where it was taken (a transaction pooler between baton and the server?): contended locks wait through the table only from now on; give listen_dsn a direct DSN")
			}
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		l.fail()
	}
	return err
}

// releaseOnLine is LockFastRelease's statement run on the session's line
// together with the unlock of the turnstiles it releases, in one round
// trip; ok false when the session holds no such turnstile (the statement
// was not run).
func (d *Driver) releaseOnLine(ctx context.Context, p driver.FastReleaseParams, query string, args []any, scan func(pgx.Rows) error) (bool, error) {
	v, found := d.lines.Load(p.SessionID)
	if !found {
		return false, nil
	}
	l := v.(*line)
	l.mu.Lock()
	defer l.mu.Unlock()
	match := func(id driver.Ident) bool {
		return id.Kind == p.Kind && id.NS == p.NS && (p.Name == "" || id.Name == p.Name)
	}
	any := false
	for id := range l.held {
		any = any || match(id)
	}
	if !any || l.conn == nil {
		return false, nil
	}
	b := &pgx.Batch{}
	b.Queue(d.Q(query), args...)
	d.queueUnlocks(b, l, match)
	// The unlocks run before the release commits: a contender woken by
	// one waits, in its upsert, for that commit and decides on the row it
	// wrote.
	return true, d.sendOnLine(ctx, l, b, scan)
}

// lineState is the driver's record of its lines.
type lineState struct {
	lines     sync.Map // session id -> *line
	lineCount atomic.Int32
	linesOff  atomic.Bool
	// linesAfter: no line is connected before this moment (Unix ns),
	// after a connection attempt failed.
	linesAfter atomic.Int64
}
