package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/stmtbound"
)

var _ driver.Locks = (*Driver)(nil)

// Locks implements driver.Driver: the driver itself.
func (d *Driver) Locks() driver.Locks { return d }

// AcquiresMany implements driver.Locks: fast_acquire_many, one
// statement.
func (d *Driver) AcquiresMany() bool { return true }

// RemovesInOneCall implements driver.Locks: {p}remove_requests and
// {p}withdraw_call.
func (d *Driver) RemovesInOneCall() bool { return true }

// ReleasesInTx implements driver.Locks: LockRegrant hands on instead.
func (d *Driver) ReleasesInTx() bool { return false }

// AdoptsHolders implements driver.Locks: the slow path finds the inline
// holder in the lock's row.
func (d *Driver) AdoptsHolders() bool { return false }

// LockFastAcquire implements driver.Driver: one statement on a free lock
// (the instance is the lock row's inline holder), a second one for a
// reader beside other readers (a request row). A writer refused by the
// first needs the slow path: the second would refuse it too.
func (d *Driver) LockFastAcquire(ctx context.Context, p driver.FastAcquireParams) (driver.Request, bool, error) {
	nr, nw := sqlbase.ModeCounts(p.Mode)
	r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident, Mode: p.Mode,
		Status: driver.StatusGranted, CallID: p.CallID, Inline: true}
	// The mode as a plain string: pgx encodes a named string type by
	// reflection, on every call.
	args := []any{p.Kind, []byte(p.NS), []byte(p.Name), nr, nw, p.SessionID, p.ClientID, string(p.Mode), p.CallID}
	var inc *int64
	found := false
	scan := func(rows pgx.Rows) error {
		for rows.Next() {
			found = true
			if err := rows.Scan(&r.ID, &r.Token, &inc); err != nil {
				return err
			}
		}
		return nil
	}
	if p.Mode == driver.ModeRead && d.joined.Has(p.Ident) {
		return d.joinReaders(ctx, r, p, args)
	}
	seen := d.seen.Has(p.Ident)
	if seen {
		if err := d.acquireExisting(ctx, args, scan, &found, &inc, p.Incarnation); err != nil {
			return driver.Request{}, false, err
		}
	}
	if !found && !(seen && p.Mode == driver.ModeRead) {
		// Not seen, or a writer refused: the lock is taken, or the row is
		// gone (the upkeep deleted it), which only the upsert tells
		// apart. Refused there too, the lock is taken, and the engine's
		// contention hint keeps its next calls off the fast path. (A
		// reader goes on to fast_acquire_shared, an upsert as well.)
		if err := d.direct(ctx, "fast_acquire", args, scan); err != nil {
			return driver.Request{}, false, fmt.Errorf("fast_acquire: %w", err)
		}
		d.seen.Add(p.Ident)
	}
	if !found && p.Mode == driver.ModeRead {
		return d.joinReaders(ctx, r, p, args)
	}
	return outcome(r, found, p.Incarnation, inc)
}

// acquireExisting is LockFastAcquire on a lock whose row the driver has
// seen (fast_acquire_existing, scanned by scan into found and inc), and
// the row's incarnation for a grant when the session checks it (want)
// and the row has none yet.
func (d *Driver) acquireExisting(ctx context.Context, args []any, scan func(pgx.Rows) error, found *bool, inc **int64, want int64) error {
	if err := d.direct(ctx, "fast_acquire_existing", args, scan); err != nil {
		return fmt.Errorf("fast_acquire_existing: %w", err)
	}
	if *found && *inc == nil && want != 0 {
		// The row's incarnation is not set yet (ident_incarnation);
		// no row: a crash emptied the lock state, and inc stays nil.
		err := d.RowNamed(ctx, nil, "ident_incarnation", args[:3]...).Scan(inc)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			// Granted, unchecked: the engine withdraws the call, as
			// after any statement that may have written.
			return fmt.Errorf("ident_incarnation: %w", err)
		}
	}
	return nil
}

// outcome is LockFastAcquire's answer once its statements ran: refused
// unless one granted r (found), and ErrServerRestarted for a grant from
// lock state that a crash emptied after the session began (its
// incarnation want; inc the grant's), which the caller gives up with
// the session.
func outcome(r driver.Request, found bool, want int64, inc *int64) (driver.Request, bool, error) {
	switch {
	case !found:
		return driver.Request{}, false, nil
	case stale(want, inc):
		return r, false, driver.ErrServerRestarted
	}
	return r, true, nil
}

// joinReaders is LockFastAcquire for a reader beside other readers
// (fast_acquire_shared): r granted as a request row, or refused. The
// identifier is marked joined while the readers it joins are others, so
// that the next reader of this driver comes here first; a reader that
// found itself alone, or was refused, unmarks it.
func (d *Driver) joinReaders(ctx context.Context, r driver.Request, p driver.FastAcquireParams, args []any) (driver.Request, bool, error) {
	var inc *int64
	var readers int64
	found := false
	err := d.direct(ctx, "fast_acquire_shared", args, func(rows pgx.Rows) error {
		for rows.Next() {
			found = true
			if err := rows.Scan(&r.ID, &r.Token, &inc, &readers); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return driver.Request{}, false, fmt.Errorf("fast_acquire_shared: %w", err)
	}
	if found && readers > 1 {
		d.joined.Add(p.Ident)
	} else {
		d.joined.Remove(p.Ident)
	}
	r.Inline = false
	return outcome(r, found, p.Incarnation, inc)
}

// stale reports whether a grant came from lock state of another
// incarnation (inc, nil when the lock state has none) than the session's
// (want, 0 when the engine does not check).
func stale(want int64, inc *int64) bool {
	return want != 0 && (inc == nil || *inc != want)
}

// LockFastAcquireMany implements driver.Locks, in one statement
// when every name is free: fast_acquire_many_existing when the driver has
// seen every name's row, else fast_acquire_many_free (also after the
// former found a row missing or lost a race); {p}fast_acquire_many for
// readers refused there, which may join other readers.
func (d *Driver) LockFastAcquireMany(ctx context.Context, p driver.FastAcquireParams, names []string) ([]driver.Request, bool, error) {
	nr, nw := sqlbase.ModeCounts(p.Mode)
	bnames := make([][]byte, len(names))
	for i, n := range names {
		bnames[i] = []byte(n)
	}
	var byName map[string]driver.Request
	var restarted bool
	args := []any{p.Kind, []byte(p.NS), bnames, nr, nw, p.SessionID, p.ClientID, string(p.Mode), p.CallID}
	scan := func(rows pgx.Rows) (err error) {
		byName, restarted, err = scanGrants(rows, p, len(names))
		return err
	}
	seen := d.seen.HasAll(p.Kind, p.NS, names)
	if seen {
		if err := d.acquireManyExisting(ctx, p, args, scan, &byName, len(names)); err != nil {
			return nil, false, err
		}
	}
	if len(byName) == 0 && !(seen && p.Mode == driver.ModeRead) {
		// Not seen, or writers refused (a reader refused goes on to the
		// function below, which makes missing rows as well).
		if err := d.direct(ctx, "fast_acquire_many_free", args, scan); err != nil {
			return nil, false, fmt.Errorf("fast_acquire_many_free: %w", err)
		}
		d.seen.AddAll(p.Kind, p.NS, names)
	}
	switch {
	case len(byName) > 0 && len(byName) < len(names):
		return nil, false, d.undoMany(ctx, p, byName)
	case len(byName) == 0 && p.Mode == driver.ModeRead:
		// {p}fast_acquire_many's second way: readers beside readers. (A
		// writer it would refuse as the statement before did.)
		if err := d.direct(ctx, "fast_acquire_many", args, scan); err != nil {
			return nil, false, fmt.Errorf("fast_acquire_many: %w", err)
		}
	}
	return grantsInOrder(names, byName, restarted)
}

// acquireManyExisting is LockFastAcquireMany on names whose rows the
// driver has seen (fast_acquire_many_existing, scanned by scan into
// byName). A grant of some of the n names only is undone and byName
// emptied: a row is missing, or a name was taken meanwhile, which the
// upsert after it tells apart.
func (d *Driver) acquireManyExisting(ctx context.Context, p driver.FastAcquireParams, args []any, scan func(pgx.Rows) error, byName *map[string]driver.Request, n int) error {
	if err := d.direct(ctx, "fast_acquire_many_existing", args, scan); err != nil {
		return fmt.Errorf("fast_acquire_many_existing: %w", err)
	}
	if len(*byName) > 0 && len(*byName) < n {
		if err := d.undoMany(ctx, p, *byName); err != nil {
			return err
		}
		*byName = nil
	}
	return nil
}

// grantsInOrder is LockFastAcquireMany's answer: the grants of byName in
// the order of names, refused when there are none, ErrServerRestarted
// when a grant came from lock state of another incarnation (restarted).
func grantsInOrder(names []string, byName map[string]driver.Request, restarted bool) ([]driver.Request, bool, error) {
	if len(byName) == 0 {
		return nil, false, nil
	}
	out := make([]driver.Request, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	if restarted {
		return out, false, driver.ErrServerRestarted
	}
	return out, true, nil
}

// undoMany releases the inline holders a many-name statement granted
// when it could not grant every name (another call took one between its
// read and its write, or a row was missing); those it cannot release are
// the engine's to remove (driver.ErrPartialGrant).
func (d *Driver) undoMany(ctx context.Context, p driver.FastAcquireParams, granted map[string]driver.Request) error {
	for name := range granted {
		if _, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: p.SessionID, Kind: p.Kind, NS: p.NS,
			Name: name, InlineOnly: true}); err != nil {
			return errors.Join(driver.ErrPartialGrant, err)
		}
	}
	return nil
}

// scanGrants reads fast_acquire_many's rows, the granted requests by
// name; restarted is set when a grant came from lock state of another
// incarnation than the session's.
func scanGrants(rows pgx.Rows, p driver.FastAcquireParams, n int) (map[string]driver.Request, bool, error) {
	byName := make(map[string]driver.Request, n)
	restarted := false
	for rows.Next() {
		var name []byte
		var inc *int64
		r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Mode: p.Mode, Status: driver.StatusGranted, CallID: p.CallID}
		if err := rows.Scan(&name, &r.ID, &r.Token, &inc, &r.Inline); err != nil {
			return nil, false, err
		}
		r.Ident = driver.Ident{Kind: p.Kind, NS: p.NS, Name: string(name)}
		byName[r.Name] = r
		restarted = restarted || stale(p.Incarnation, inc)
	}
	return byName, restarted, nil
}

// LockRequest implements driver.Locks with the {p}request function:
// one round trip instead of a transaction of seven.
func (d *Driver) LockRequest(ctx context.Context, p driver.RequestParams) (driver.Request, error) {
	r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident, Mode: p.Mode, CallID: p.CallID}
	var status string // plain: database/sql converts into it without reflection
	err := d.RowNamed(ctx, nil, "request", p.Kind, []byte(p.NS), []byte(p.Name), p.SessionID, p.ClientID, string(p.Mode), p.CallID, p.TryOnce).
		Scan(&r.ID, &status, &r.Token)
	r.Status = driver.RequestStatus(status)
	switch {
	case err != nil:
		return driver.Request{}, fmt.Errorf("request: %w", err)
	case r.Status == "X":
		return driver.Request{}, driver.ErrNoSession
	case r.Status == "W":
		return driver.Request{}, driver.ErrWouldWait
	}
	return r, nil
}

// LockFastRelease implements driver.Driver in one statement, hand-off to
// waiters included, so it never reports identifiers to re-examine. A
// session with request rows releases through {p}release_name, a namespace's names in name order (release_ns); one holding only
// inline holders by one update of them (release_inline).
func (d *Driver) LockFastRelease(ctx context.Context, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	query, args, err := d.releaseStatement(p)
	if err != nil {
		return 0, nil, err
	}
	var n int
	var grants []string
	var contended [][]byte
	scan := func(rows pgx.Rows) error { return scanReleased(rows, &n, &grants, &contended) }
	if p.InlineOnly {
		// A row per name released (release_inline).
		scan = func(rows pgx.Rows) error { return scanReleasedInline(rows, &n, &grants, &contended) }
	}
	if p.RowsOn != "" && !p.InlineOnly && p.Limit == 0 && !d.lines.Holds(p.SessionID, driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.Name}) {
		// A session with turnstiles in scope releases on its line below.
		if n, done, err := d.releaseRows(ctx, p); done || err != nil {
			return n, nil, err
		}
	}
	done, err := d.releaseOnLine(ctx, p, query, args, scan)
	if !done || err != nil {
		// No turnstile to let go, or the line failed (closed now, which
		// let them go): the release through the pool, which releases
		// what the failed one may not have.
		n, grants, contended = 0, nil, nil
		err = d.direct(ctx, query, args, scan)
	}
	if err != nil {
		return 0, nil, err
	}
	handLocal(grants)
	if p.Contended != nil {
		reportContended(p, contended)
	}
	return n, nil, nil
}

// releaseStatement is LockFastRelease's statement for p and its
// arguments.
func (d *Driver) releaseStatement(p driver.FastReleaseParams) (string, []any, error) {
	var name, limit any
	if p.Name != "" {
		name = []byte(p.Name)
	}
	if p.Limit > 0 {
		limit = p.Limit
	}
	switch {
	case p.InlineOnly && p.Name != "":
		return "release_inline_name", []any{p.SessionID, p.Kind, []byte(p.NS), name, d.channel}, nil
	case p.InlineOnly:
		return "release_inline", []any{p.SessionID, p.Kind, []byte(p.NS), d.channel}, nil
	case p.Name != "":
		return "release_name", []any{p.SessionID, p.Kind, []byte(p.NS), name, limit, d.channel}, nil
	case p.Limit == 0:
		return "release_ns", []any{p.SessionID, p.Kind, []byte(p.NS), d.channel}, nil
	}
	return "", nil, errors.New("postgres: a release with a limit names its lock (FastReleaseParams.Limit)")
}

// scanReleased reads the rows of release_name and release_ns: the
// instances released (n), the grants to hand on and the names that have
// waiters (contended).
func scanReleased(rows pgx.Rows, n *int, grants *[]string, contended *[][]byte) error {
	for rows.Next() {
		var g string
		if err := rows.Scan(n, &g, contended); err != nil {
			return err
		}
		*grants = append(*grants, g)
	}
	return nil
}

// scanReleasedInline reads release_inline's rows, one per name released,
// into what scanReleased reads.
func scanReleasedInline(rows pgx.Rows, n *int, grants *[]string, contended *[][]byte) error {
	for rows.Next() {
		var name []byte
		var waiters int
		var g *string
		if err := rows.Scan(&name, &waiters, &g); err != nil {
			return err
		}
		*n++
		if waiters > 0 {
			*contended = append(*contended, name)
		}
		if g != nil {
			*grants = append(*grants, *g)
		}
	}
	return nil
}

// reportContended tells p.Contended of each name that has waiters.
func reportContended(p driver.FastReleaseParams, contended [][]byte) {
	for _, name := range contended {
		p.Contended(driver.Ident{Kind: p.Kind, NS: p.NS, Name: string(name)})
	}
}

// releaseRows is LockFastRelease by release_rows: the session's request
// rows on p.RowsOn in one statement. done false when it released nothing
// or the session has an inline holder in the namespace: the caller's
// statement then does the release.
func (d *Driver) releaseRows(ctx context.Context, p driver.FastReleaseParams) (n int, done bool, err error) {
	var np int64
	var grants *string
	scan := func(rows pgx.Rows) error {
		for rows.Next() {
			done = true
			if err := rows.Scan(&n, &np, &grants); err != nil {
				return err
			}
		}
		return nil
	}
	args := []any{p.SessionID, p.Kind, []byte(p.NS), []byte(p.RowsOn), d.channel}
	if err := d.direct(ctx, "release_rows", args, scan); err != nil || !done {
		return 0, false, err
	}
	if grants != nil {
		handLocal([]string{*grants})
	}
	if np > 0 && p.Contended != nil {
		p.Contended(driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.RowsOn})
	}
	return n, true, nil
}

// LockRegrant implements driver.Driver with the {p}regrant_grants
// function: one statement per identifier, its grants handed to clients in
// this process at once.
func (d *Driver) LockRegrant(ctx context.Context, ids []driver.Ident) (bool, error) {
	for _, id := range ids {
		var grants string
		if err := d.RowNamed(ctx, nil, "regrant", id.Kind, []byte(id.NS), []byte(id.Name), d.channel).Scan(&grants); err != nil {
			return true, err
		}
		handLocal([]string{grants})
	}
	return true, nil
}

// LockRequestsRemove implements driver.Locks with one call of
// {p}remove_requests (the identifiers' rows locked in
// order, the requests deleted, each identifier handed on by
// {p}regrant_grants, which sees transactions' gates itself), its grants
// handed to clients in this process at once.
func (d *Driver) LockRequestsRemove(ctx context.Context, rs []driver.Request) (bool, error) {
	ids := make([]int64, len(rs))
	var idents []driver.Ident
	for i, r := range rs {
		ids[i] = r.ID
		idents = append(idents, r.Ident)
	}
	slices.SortFunc(idents, driver.Ident.Compare)
	idents = slices.Compact(idents)
	kinds := make([]int16, len(idents))
	nss, names := make([][]byte, len(idents)), make([][]byte, len(idents))
	for i, id := range idents {
		kinds[i], nss[i], names[i] = int16(id.Kind), []byte(id.NS), []byte(id.Name)
	}
	var grants string
	if err := d.RowNamed(ctx, nil, "remove_call", ids, kinds, nss, names, d.channel).Scan(&grants); err != nil {
		return false, err
	}
	handLocal([]string{grants})
	return true, nil
}

// LockCallWithdraw implements driver.Locks with one call of
// {p}withdraw_call, or with settle of {p}settle_call
// (the rows locked first), its grants handed to clients
// in this process at once.
func (d *Driver) LockCallWithdraw(ctx context.Context, sessionID string, callID int64, ids []driver.Ident, settle bool) (bool, error) {
	if len(ids) == 0 {
		return true, nil
	}
	names := make([][]byte, len(ids))
	for i, id := range ids {
		names[i] = []byte(id.Name)
	}
	var grants string
	query := "withdraw_call"
	if settle {
		query = "settle_call"
	}
	if err := d.RowNamed(ctx, nil, query, sessionID, callID, ids[0].Kind, []byte(ids[0].NS), names, d.channel).Scan(&grants); err != nil {
		return false, err
	}
	handLocal([]string{grants})
	return true, nil
}

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

// TxGateChecks implements driver.Locks: in READ COMMITTED.
func (d *Driver) TxGateChecks() bool { return true }

// TxGateSerial implements driver.Locks: PostgreSQL's gates are
// transaction-level advisory locks; other writers go on.
func (d *Driver) TxGateSerial() bool { return false }

// TxPrepare implements driver.Locks: the identifier's row, gated.
func (d *Driver) TxPrepare(ctx context.Context, id driver.Ident) error {
	if _, err := d.ExecNamed(ctx, nil, "tx_prepare", id.Kind, []byte(id.NS), []byte(id.Name)); err != nil {
		return fmt.Errorf("tx_prepare: %w", err)
	}
	return nil
}

// TxGate implements driver.Locks with {p}tx_gate: one
// call, which waits under lock_timeout, checks the sessions in READ
// COMMITTED and never aborts the caller's transaction.
func (d *Driver) TxGate(ctx context.Context, tx driver.CallerTx, id driver.Ident, mode driver.LockMode, wait time.Duration, check bool) (bool, error) {
	var out string
	if err := tx.ScanRow(ctx, d.Q("tx_gate"), []any{id.Kind, []byte(id.NS), []byte(id.Name), mode, gateMillis(wait), check}, &out); err != nil {
		return false, fmt.Errorf("tx_gate: %w", err)
	}
	a, ok := gateAnswers[out]
	if !ok {
		return false, fmt.Errorf("tx_gate: unexpected answer %q", out)
	}
	return a.checked, a.err
}

// gateMillis is {p}tx_gate's wait: whole milliseconds, -1 for as long as
// it takes.
func gateMillis(wait time.Duration) int64 {
	if wait < 0 {
		return -1
	}
	return min(int64(math.Ceil(float64(wait)/float64(time.Millisecond))), math.MaxInt32)
}

// gateAnswers are TxGate's results for {p}tx_gate's answers.
var gateAnswers = map[string]struct {
	checked bool
	err     error
}{
	"ok":        {true, nil},
	"unchecked": {false, nil},
	"session":   {false, driver.ErrGateSession},
	"ungated":   {false, driver.ErrGateUngated},
	"busy":      {false, driver.ErrGateBusy},
	"deadlock":  {false, driver.ErrGateDeadlock},
}

// TxGateHeld implements driver.Locks: {p}gate_held's probe is a
// transaction-level lock of tx.
func (d *Driver) TxGateHeld(ctx context.Context, tx driver.Tx, id driver.Ident) (driver.LockMode, error) {
	var mode driver.LockMode
	err := tx.(*sqlbase.Tx).Row(ctx, "tx_gate_held", id.Kind, []byte(id.NS), []byte(id.Name)).Scan(&mode)
	if err != nil {
		return "", fmt.Errorf("tx_gate_held: %w", err)
	}
	return mode, nil
}

// LockRequestStatusesGated implements driver.Locks.
func (d *Driver) LockRequestStatusesGated(ctx context.Context, ids []int64) (map[int64]driver.Request, []driver.Ident, error) {
	return sqlbase.StatusesGated(ctx, d.DB, ids)
}

// TxGatedAmong implements driver.Locks.
func (d *Driver) TxGatedAmong(ctx context.Context, ids []driver.Ident) ([]driver.Ident, error) {
	return sqlbase.GatedAmong(ctx, d.DB, ids)
}

// TxHoldCaller implements driver.Locks: pg_locks lists the gates.
func (d *Driver) TxHoldCaller(context.Context, driver.CallerTx, driver.TxHold) error { return nil }

// TxHolds implements driver.Locks from pg_locks.
func (d *Driver) TxHolds(ctx context.Context) ([]driver.LockInfo, error) {
	rows, err := d.QueryNamed(ctx, nil, "tx_holds")
	if err != nil {
		return nil, err
	}
	return sqlbase.ScanTxHolds(rows, false)
}
