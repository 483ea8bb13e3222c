package mysql

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	sqldrv "database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/txn"
)

// Locks implements driver.Driver: the driver itself.
func (d *Driver) Locks() driver.Locks { return d }

// AcquiresMany implements driver.Locks: fast_acquire for every name in
// one call.
func (d *Driver) AcquiresMany() bool { return true }

// RemovesInOneCall implements driver.Locks: {p}remove_requests and
// {p}withdraw_call.
func (d *Driver) RemovesInOneCall() bool { return true }

// ReleasesInTx implements driver.Locks: LockRegrant hands on instead.
func (d *Driver) ReleasesInTx() bool { return false }

// AdoptsHolders implements driver.Locks: the slow path adopts a fast
// holder into InnoDB, and a release with a limit clears the fast row's
// session of an adopted holder (release_instances), so that a fast
// release would no longer find its way to the instance.
func (d *Driver) AdoptsHolders() bool { return true }

// Uncontended locks live in the MEMORY table {p}lock_fast:
// an acquire and a release are one autocommit statement each, with no
// redo-log flush. The slow path (InnoDB rows under the identifier's row
// lock) takes an identifier over with adopt, and the upkeep hands idle
// ones back (demoteIdle).

// querier is what *sql.Tx and *sql.Conn have in common.
type querier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// execHot runs a statement of the fast paths outside a transaction: as
// text on the main pool for a one-shot command's first few calls (one
// connection for the process), then prepared on the hot pool, which
// spares the server parsing it on every call, with a context that cannot
// end (see Driver.hot: the connections' timeouts bound it).
func (d *Driver) execHot(ctx context.Context, name string, args ...any) (sql.Result, error) {
	db, ctx := d.onHot(ctx, name)
	return db.ExecNamed(ctx, nil, name, args...)
}

// rowHot is execHot for a statement that returns a row.
func (d *Driver) rowHot(ctx context.Context, name string, args ...any) *sql.Row {
	db, ctx := d.onHot(ctx, name)
	return db.RowNamed(ctx, nil, name, args...)
}

// onHot is where execHot and rowHot run the named statement, and in which
// context: prepared on the hot pool, in ctx without its end, once the
// fast paths use it; otherwise as text on the main pool, in ctx.
func (d *Driver) onHot(ctx context.Context, name string) (*sqlbase.DB, context.Context) {
	if d.fastPoolDue() {
		d.hotDB.PrepareNamed(ctx, name)
		return d.hotDB, context.WithoutCancel(ctx)
	}
	return d.DB, ctx
}

// LockConflictHeld implements driver.Driver: the fast holder first, one
// MEMORY read on the hot pool (fast_conflict_held), which answers a try
// on a lock the fast path holds with one table read; then, unless it
// conflicts, both tables (lock_conflict_held), for a holder the slow path
// has taken over.
func (d *Driver) LockConflictHeld(ctx context.Context, sessionID string, id driver.Ident, mode driver.LockMode) (bool, error) {
	var held bool
	err := d.rowHot(ctx, "fast_conflict_held", id.Kind, bin(id.NS), bin(id.Name), sessionID, string(mode)).Scan(&held)
	if err != nil {
		return false, fmt.Errorf("fast_conflict_held: %w", err)
	}
	if held {
		return true, nil
	}
	return d.DB.LockConflictHeld(ctx, sessionID, id, mode)
}

// LockFastAcquire implements driver.Driver: one fast_acquire statement,
// which makes the session the identifier's fast holder when the
// identifier is free, nobody waits and the session's incarnation is the
// lock state's. A refusal sends the engine to the slow path, whose session
// check gives up a session of an earlier incarnation.
func (d *Driver) LockFastAcquire(ctx context.Context, p driver.FastAcquireParams) (driver.Request, bool, error) {
	r := fastHolder(p)
	res, err := d.execHot(ctx, "fast_acquire", p.Kind, bin(p.NS), bin(p.Name), r.ID,
		p.SessionID, p.ClientID, string(p.Mode), p.CallID, p.Incarnation, p.Incarnation)
	if err != nil {
		return driver.Request{}, false, fmt.Errorf("fast_acquire: %w", err)
	}
	switch n, err := res.RowsAffected(); {
	case err != nil:
		return driver.Request{}, false, err
	case n == 0 && p.Mode == driver.ModeRead:
		return d.acquireShared(ctx, p)
	case n == 0:
		return driver.Request{}, false, nil
	}
	if r.Token, err = res.LastInsertId(); err != nil {
		return driver.Request{}, false, err
	}
	return r, true, nil
}

// fastHolder is the fast holder p proposes, with a new holder id; the
// statement that grants it sets its token.
func fastHolder(p driver.FastAcquireParams) driver.Request {
	return driver.Request{ID: sqlbase.HolderID(), SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident, Mode: p.Mode,
		Status: driver.StatusGranted, CallID: p.CallID, Inline: true}
}

// acquireShared grants a reader beside others (fast_acquire refused it:
// the lock is not free) as a request row, when the rule grants it at
// once: {p}request with try-once, which stores nothing otherwise, and the
// session's incarnation checked as fast_acquire checks it (a gated
// identifier's gate counted).
func (d *Driver) acquireShared(ctx context.Context, p driver.FastAcquireParams) (driver.Request, bool, error) {
	r, err := d.request(ctx, driver.RequestParams{SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident,
		Mode: p.Mode, CallID: p.CallID, TryOnce: true}, p.Incarnation)
	switch {
	case errors.Is(err, driver.ErrWouldWait) || errors.Is(err, driver.ErrNoSession):
		return driver.Request{}, false, nil
	case err != nil:
		return driver.Request{}, false, err
	}
	return r, true, nil
}

// LockRequest implements driver.Locks: {p}request
// adopts a fast holder, decides and stores the request in one call.
func (d *Driver) LockRequest(ctx context.Context, p driver.RequestParams) (driver.Request, error) {
	return d.request(ctx, p, nil)
}

// request calls {p}request_commit on a connection of the fast pool,
// which commits what {p}request did (the identifier's row
// lock ends with the call, not one round trip later); inc is nil (the
// session must be live) or the session's incarnation. A call that failed
// is rolled back. The fast holder it found is marked adopted after the
// commit.
func (d *Driver) request(ctx context.Context, p driver.RequestParams, inc any) (driver.Request, error) {
	r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident, Mode: p.Mode, CallID: p.CallID}
	var status string
	var holder int64
	c, onMain, err := d.fastConn(ctx)
	if err != nil {
		return driver.Request{}, err
	}
	query := "request_call"
	if p.Covered {
		query = "reentry_call" // a re-entry first looked for
	}
	err = c.QueryRowContext(ctx, d.Q(query), p.Kind, bin(p.NS), bin(p.Name), p.SessionID, p.ClientID,
		string(p.Mode), p.CallID, p.TryOnce, inc).Scan(&status, &r.ID, &r.Token, &holder)
	if err != nil {
		_ = endFastTx(ctx, c, false)
		return driver.Request{}, fmt.Errorf("request: %w", err)
	}
	d.doneFast(ctx, c, onMain)
	d.clearAdopted(ctx, holder)
	r.Status = driver.RequestStatus(status)
	switch status {
	case "X":
		return driver.Request{}, driver.ErrNoSession
	case "W":
		return driver.Request{}, driver.ErrWouldWait
	}
	return r, nil
}

// LockFastAcquireMany implements driver.Locks: fast_acquire for
// every name in one statement, then the grants read back. When only some
// were granted they are withdrawn; one the slow path took over meanwhile
// cannot be, and the engine is told so (driver.ErrPartialGrant).
func (d *Driver) LockFastAcquireMany(ctx context.Context, p driver.FastAcquireParams, names []string) ([]driver.Request, bool, error) {
	hids := make(map[string]int64, len(names))
	for _, n := range names {
		hids[n] = sqlbase.HolderID()
	}
	var granted map[string]driver.Request
	var err error
	if d.mariadb {
		granted, err = d.acquireManyReturning(ctx, p, names, hids)
	} else {
		if _, err = d.SQL.ExecContext(ctx, d.manyText(len(names), false), manyArgs(p, names, hids, false)...); err == nil {
			granted, err = d.fastGranted(ctx, p)
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("fast_acquire_many: %w", err)
	}
	if len(granted) == len(names) {
		out := make([]driver.Request, len(names))
		for i, n := range names {
			out[i] = granted[n]
		}
		return out, true, nil
	}
	if len(granted) == 0 {
		return nil, false, nil
	}
	res, err := d.ExecNamed(ctx, nil, "fast_undo", p.SessionID, p.Kind, bin(p.NS), p.CallID)
	if err != nil {
		return nil, false, fmt.Errorf("fast_undo: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || int(n) < len(granted) {
		return nil, false, errors.Join(driver.ErrPartialGrant, err)
	}
	return nil, false, nil
}

// manyText is fast_acquire_many for n names, their rows by position from
// the Sequence engine's seq_1_to_n (seq) or from a derived table of UNION
// ALL selects.
func (d *Driver) manyText(n int, seq bool) string {
	var rows string
	if seq {
		vars := strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
		rows = "SELECT ELT(s.seq, " + vars + ") AS name, CAST(ELT(s.seq, " + vars + ") AS SIGNED) AS hid FROM seq_1_to_" + strconv.Itoa(n) + " s"
	} else {
		rows = strings.TrimSuffix(strings.Repeat("SELECT ? AS name, ? AS hid UNION ALL ", n), " UNION ALL ")
	}
	return strings.Replace(d.Q("fast_acquire_many"), "{rows}", rows, 1)
}

// manyArgs are manyText's arguments for names, with their holder ids: in
// pairs, or (seq) the names and then the ids.
func manyArgs(p driver.FastAcquireParams, names []string, hids map[string]int64, seq bool) []any {
	args := make([]any, 0, 2*len(names)+8)
	args = append(args, p.Kind, bin(p.NS), p.SessionID, p.ClientID, string(p.Mode), p.CallID)
	if seq {
		for _, n := range names {
			args = append(args, bin(n))
		}
		for _, n := range names {
			args = append(args, hids[n])
		}
	} else {
		for _, n := range names {
			args = append(args, bin(n), hids[n])
		}
	}
	return append(args, p.Incarnation, p.Incarnation)
}

// acquireManyReturning runs MariaDB's many-name acquire, whose INSERT
// ... RETURNING reports each row as the statement left it: the names
// whose holder is the one this call proposed (hids) are granted, in the
// one round trip (MySQL reads them back: fastGranted). Its rows come from
// the Sequence engine, or from the derived table once the server turned
// out to have no such engine (noSeq).
func (d *Driver) acquireManyReturning(ctx context.Context, p driver.FastAcquireParams, names []string, hids map[string]int64) (map[string]driver.Request, error) {
	if !d.noSeq.Load() {
		granted, err := d.runManyReturning(ctx, p, true, manyArgs(p, names, hids, true), hids)
		if !noSequenceEngine(err) {
			return granted, err
		}
		d.noSeq.Store(true)
	}
	return d.runManyReturning(ctx, p, false, manyArgs(p, names, hids, false), hids)
}

// noSequenceEngine reports whether err says that the server has no
// Sequence engine (its seq_1_to_N tables do not exist).
func noSequenceEngine(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && me.Number == errNoSuchTable && strings.Contains(me.Message, "seq_1_to_")
}

// runManyReturning runs a many-name acquire of len(hids) names (its rows
// from the Sequence engine when seq is set) and reads the grants.
func (d *Driver) runManyReturning(ctx context.Context, p driver.FastAcquireParams, seq bool, args []any, hids map[string]int64) (map[string]driver.Request, error) {
	var rows *sql.Rows
	var err error
	switch st := d.manyStmt(ctx, len(hids), seq); {
	case st != nil:
		rows, err = st.QueryContext(context.WithoutCancel(ctx), args...)
	case d.fastReady.Load():
		// The hot pool, as execHot's statements.
		rows, err = d.hot.QueryContext(context.WithoutCancel(ctx), d.manyText(len(hids), seq)+returning, args...)
	default:
		rows, err = d.SQL.QueryContext(ctx, d.manyText(len(hids), seq)+returning, args...)
	}
	if err != nil {
		return nil, err
	}
	return d.scanGranted(rows, p, func(name string, hid int64) bool { return hids[name] == hid })
}

// returning is what MariaDB's many-name acquire returns.
const returning = " RETURNING name, h_id, fence"

// manyPrepared is the most names a many-name acquire runs as a prepared
// statement of its own (one per count; more run as text).
const manyPrepared = 16

// manyStmt returns MariaDB's many-name acquire of n names (manyText with
// returning, made only when it is not prepared yet; the form once
// prepared is kept, noSeq being set only when the Sequence engine's form
// cannot run) prepared on the hot pool, or nil: before the hot pool is in use (a one-shot command), for
// more than manyPrepared names, or when preparing failed.
// As text the server parses the statement on every call, a large part of
// a ten-name acquire's time.
func (d *Driver) manyStmt(ctx context.Context, n int, seq bool) *sql.Stmt {
	if n > manyPrepared || !d.fastReady.Load() {
		return nil
	}
	if st := d.many[n].Load(); st != nil {
		return st
	}
	st, err := d.hot.PrepareContext(context.WithoutCancel(ctx), d.manyText(n, seq)+returning)
	if err != nil {
		return nil
	}
	if !d.many[n].CompareAndSwap(nil, st) {
		st.Close() // prepared meanwhile by another call
		return d.many[n].Load()
	}
	return st
}

// fastGranted reads the fast holders of p's call, by name.
func (d *Driver) fastGranted(ctx context.Context, p driver.FastAcquireParams) (map[string]driver.Request, error) {
	rows, err := d.QueryNamed(ctx, nil, "fast_granted", p.SessionID, p.Kind, bin(p.NS), p.CallID)
	if err != nil {
		return nil, fmt.Errorf("fast_granted: %w", err)
	}
	return d.scanGranted(rows, p, func(string, int64) bool { return true })
}

// scanGranted reads rows of name, holder id and fence into p's grants, by
// name: those keep accepts.
func (d *Driver) scanGranted(rows *sql.Rows, p driver.FastAcquireParams, keep func(name string, hid int64) bool) (map[string]driver.Request, error) {
	defer rows.Close()
	out := map[string]driver.Request{}
	for rows.Next() {
		var name []byte
		var hid sql.NullInt64
		r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Mode: p.Mode, Status: driver.StatusGranted,
			CallID: p.CallID, Inline: true}
		if err := rows.Scan(&name, &hid, &r.Token); err != nil {
			return nil, err
		}
		if hid.Valid && keep(string(name), hid.Int64) {
			r.ID, r.Ident = hid.Int64, driver.Ident{Kind: p.Kind, NS: p.NS, Name: string(name)}
			out[r.Name] = r
		}
	}
	return out, rows.Err()
}

// LockFastRelease implements driver.Driver: the session's fast holders go
// in one statement (fast_release_name or fast_release_ns). The InnoDB
// release follows only when the session may have instances there: a
// holder the slow path took over, or request rows (p.InlineOnly unset and
// nothing released by name). A fast holder has no waiters, so only the
// InnoDB release reports identifiers to re-examine.
func (d *Driver) LockFastRelease(ctx context.Context, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	if n, waiting, done, err := d.releaseOnLine(ctx, p); done {
		return n, waiting, err
	}
	n, waiting, err := d.releaseFast(ctx, p)
	if err == nil {
		// Then the turnstiles: the next contender gets one only once the
		// release is done.
		d.letGo(ctx, p.SessionID, driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.Name})
	}
	return n, waiting, err
}

// releaseFast is LockFastRelease without the turnstiles.
func (d *Driver) releaseFast(ctx context.Context, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	query, args := "fast_release_ns", []any{p.SessionID, p.Kind, bin(p.NS)}
	if p.Name != "" {
		query, args = "fast_release_name", append(args, bin(p.Name))
	}
	res, err := d.execHot(ctx, query, args...)
	if err != nil {
		return 0, nil, err
	}
	n64, err := res.RowsAffected()
	if err != nil {
		return 0, nil, err
	}
	signal, err := res.LastInsertId()
	if err != nil {
		return 0, nil, err
	}
	return d.releaseRest(ctx, p, int(n64), signal)
}

// releaseRest is what the slow path has left to release after
// fast_release_* changed n rows and set signal (see releaseSlow).
func (d *Driver) releaseRest(ctx context.Context, p driver.FastReleaseParams, n int, signal int64) (int, []driver.Ident, error) {
	switch {
	case signal == 0 && (p.InlineOnly || p.Name != "" && n > 0):
		return n, nil, nil
	case p.Limit > 0 && n >= p.Limit:
		return n, nil, nil
	case p.Limit > 0:
		p.Limit -= n
	}
	m, waiting, err := d.releaseSlow(ctx, p, signal)
	return n + m, waiting, err
}

// releaseSlow releases the session's instances in InnoDB in one call of
// {p}release_instances (the release, the hand-on of each
// identifier with waiters and the commit in the server). signal is what
// fast_release_* saw of the session's fast holders the slow path took
// over: 3 some perhaps not adopted yet, which the call adopts first
// (under their row locks); 1 adopted ones only; 0 none. After the commit
// the grants go to their clients (wakeGranted on the pool: a client of
// another process is woken after the commit, and its listener's poll
// interval stands in when that fails), adopted holders are marked, and
// the identifiers the call left free but could not hand back to the fast
// path itself (their rows locked by another transaction) are handed back
// here (demoteLocked: the call's own answer stands in for
// fast_demote_free's read). The call hands on every identifier itself,
// gated ones too, so none is returned for the engine to
// hand on. A call that fails is rolled back.
func (d *Driver) releaseSlow(ctx context.Context, p driver.FastReleaseParams, signal int64) (int, []driver.Ident, error) {
	var name any
	if p.Name != "" {
		name = bin(p.Name)
	}
	c, onMain, err := d.fastConn(ctx)
	if err != nil {
		return 0, nil, err
	}
	var n int
	var identsJSON, grantsJSON []byte
	err = c.QueryRowContext(ctx, d.Q("release_call"), p.SessionID, p.Kind, bin(p.NS), name, signal, p.Limit).
		Scan(&n, &identsJSON, &grantsJSON)
	if err != nil {
		_ = endFastTx(ctx, c, false)
		return 0, nil, fmt.Errorf("release: %w", err)
	}
	d.doneFast(ctx, c, onMain)
	out, err := parseReleaseCall(p, identsJSON, grantsJSON)
	if err != nil {
		// Committed: what could not be read is left to the upkeep and
		// the waiters' safety nets.
		return n, nil, err
	}
	d.afterCall(ctx, out)
	reportContended(p, out.waiting)
	return n, nil, nil
}

// afterCall is what follows a committed release or withdrawal call: the
// grants go to their clients (a failed bump of other processes' clients
// still lets this process's go, and leaves the others to their poll
// interval), adopted holders are marked, and the identifiers the call
// left free but did not hand back to the fast path itself are handed
// back here (demoteLocked: the call's own answer stands in for
// fast_demote_free's read).
func (d *Driver) afterCall(ctx context.Context, out releaseOutcome) {
	if woken, _ := d.wakeGranted(ctx, d.SQL, out.grants); woken != nil {
		woken()
	}
	d.clearAdopted(ctx, out.adopted...)
	for _, id := range out.free {
		_, _ = d.demoteLocked(context.WithoutCancel(ctx), id)
	}
}

// LockRequestsRemove implements driver.Locks with one call of
// {p}remove_requests (the identifiers' rows locked in
// order, their fast holders adopted, the requests deleted and each
// identifier handed on, committed by the call; removeCall says what
// follows; a gated identifier too).
func (d *Driver) LockRequestsRemove(ctx context.Context, rs []driver.Request) (bool, error) {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b driver.Request) int {
		return cmp.Or(a.Ident.Compare(b.Ident), cmp.Compare(a.ID, b.ID))
	})
	reqs := make([][]any, len(sorted))
	for i, r := range sorted {
		reqs[i] = append([]any{r.ID}, hexIdent(r.Ident)...)
	}
	arg, err := json.Marshal(reqs)
	if err != nil {
		return false, err
	}
	return d.removeCall(ctx, "remove_call", string(arg))
}

// hexIdent is an identifier as the withdrawal and regrant calls read it
// from JSON: kind, hex namespace, hex name.
func hexIdent(id driver.Ident) []any {
	return []any{id.Kind, hex.EncodeToString([]byte(id.NS)), hex.EncodeToString([]byte(id.Name))}
}

// LockRegrant implements driver.Driver with one call of
// {p}regrant_call: each identifier's row locked in
// order and the identifier handed on, a transaction's gate counted,
// committed by the call; afterwards as LockRequestsRemove.
func (d *Driver) LockRegrant(ctx context.Context, ids []driver.Ident) (bool, error) {
	if len(ids) == 0 {
		return true, nil
	}
	sorted := slices.Compact(slices.SortedFunc(slices.Values(ids), driver.Ident.Compare))
	idents := make([][]any, len(sorted))
	for i, id := range sorted {
		idents[i] = hexIdent(id)
	}
	arg, err := json.Marshal(idents)
	if err != nil {
		return false, err
	}
	return d.removeCall(ctx, "regrant_call", string(arg))
}

// LockCallWithdraw implements driver.Locks with one call of
// {p}withdraw_call, which finds the call's requests and
// fast holders itself and withdraws them as {p}remove_requests does, or
// with settle of {p}settle_call (each row locked and its
// fast holder adopted first); afterwards as LockRequestsRemove.
func (d *Driver) LockCallWithdraw(ctx context.Context, sessionID string, callID int64, ids []driver.Ident, settle bool) (bool, error) {
	if len(ids) == 0 {
		return true, nil
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = hex.EncodeToString([]byte(id.Name))
	}
	arg, err := json.Marshal(names)
	if err != nil {
		return false, err
	}
	query := "withdraw_call"
	if settle {
		query = "settle_call"
	}
	return d.removeCall(ctx, query, sessionID, callID, ids[0].Kind, bin(ids[0].NS), string(arg))
}

// removeCall runs remove_call, withdraw_call, settle_call or
// regrant_call on the fast pool, then afterCall, as releaseSlow does.
// Each handles what it is given (true), or fails.
func (d *Driver) removeCall(ctx context.Context, query string, args ...any) (bool, error) {
	c, onMain, err := d.fastConn(ctx)
	if err != nil {
		return false, err
	}
	var n int
	var identsJSON, grantsJSON []byte
	if err := c.QueryRowContext(ctx, d.Q(query), args...).Scan(&n, &identsJSON, &grantsJSON); err != nil {
		_ = endFastTx(ctx, c, false)
		return false, fmt.Errorf("withdraw requests: %w", err)
	}
	d.doneFast(ctx, c, onMain)
	out, err := parseRemoveCall(identsJSON, grantsJSON)
	if err != nil {
		// Committed: what could not be read is left to the upkeep and
		// the waiters' safety nets.
		return true, err
	}
	d.afterCall(ctx, out)
	return true, nil
}

// reportContended tells p's Contended hook, if any, of the identifiers
// that had waiters when the release lowered their counters.
func reportContended(p driver.FastReleaseParams, waiting []driver.Ident) {
	if p.Contended != nil {
		for _, id := range waiting {
			p.Contended(id)
		}
	}
}

// releaseOutcome is what a {p}release_instances call reports: the
// identifiers that had waiters, those left free for the client to hand
// back to the fast path, the adopted holders' ids (0: none) and the
// grants.
type releaseOutcome struct {
	waiting, free []driver.Ident
	adopted       []int64
	grants        []driver.Request
}

// parseReleaseCall reads release_call's identifiers ([hex name, waiting,
// gated (always 0: the call hands gated identifiers
// on itself), adopted holder id, free: 1 left free, 2 free and handed
// back to the fast path by the call] each) and grants ([id, session, client,
// call, token] each) for the release p.
func parseReleaseCall(p driver.FastReleaseParams, identsJSON, grantsJSON []byte) (releaseOutcome, error) {
	var out releaseOutcome
	var idents [][]any
	if err := decodeNumbers(identsJSON, &idents); err != nil {
		return out, fmt.Errorf("release: identifiers: %w", err)
	}
	for _, row := range idents {
		if err := out.addIdent(row, p.Kind, p.NS); err != nil {
			return out, fmt.Errorf("release: identifiers: %w", err)
		}
	}
	return out, out.addGrants(grantsJSON)
}

// parseRemoveCall reads remove_call's identifiers ([kind, hex namespace,
// an entry as release_call's] each) and grants (as release_call's).
func parseRemoveCall(identsJSON, grantsJSON []byte) (releaseOutcome, error) {
	var out releaseOutcome
	var idents [][]any
	if err := decodeNumbers(identsJSON, &idents); err != nil {
		return out, fmt.Errorf("remove requests: identifiers: %w", err)
	}
	for _, row := range idents {
		var kind int64
		var hexNS string
		var entry []any
		if len(row) == 3 {
			entry, _ = row[2].([]any)
		}
		if entry == nil {
			return out, fmt.Errorf("remove requests: identifiers: %v is not [kind, namespace, entry]", row)
		}
		if err := scanJSONRow(row[:2], &kind, &hexNS); err != nil {
			return out, fmt.Errorf("remove requests: identifiers: %w", err)
		}
		ns, err := hex.DecodeString(hexNS)
		if err != nil {
			return out, fmt.Errorf("remove requests: identifiers: %w", err)
		}
		if err := out.addIdent(entry, int(kind), string(ns)); err != nil {
			return out, fmt.Errorf("remove requests: identifiers: %w", err)
		}
	}
	return out, out.addGrants(grantsJSON)
}

// addIdent adds one identifier entry of a release or withdrawal call
// ([hex name, waiting, gated, adopted holder id, free]) of kind and ns.
func (out *releaseOutcome) addIdent(row []any, kind int, ns string) error {
	var hexName string
	var waiting, gated, hid, free int64 // gated: always 0
	if err := scanJSONRow(row, &hexName, &waiting, &gated, &hid, &free); err != nil {
		return err
	}
	nm, err := hex.DecodeString(hexName)
	if err != nil {
		return err
	}
	id := driver.Ident{Kind: kind, NS: ns, Name: string(nm)}
	if waiting != 0 {
		out.waiting = append(out.waiting, id)
	}
	if free == 1 {
		out.free = append(out.free, id)
	}
	out.adopted = append(out.adopted, hid)
	return nil
}

// addGrants adds a call's grants ([id, session, client, call, token]
// each).
func (out *releaseOutcome) addGrants(grantsJSON []byte) error {
	var grants [][]any
	if err := decodeNumbers(grantsJSON, &grants); err != nil {
		return fmt.Errorf("release: grants: %w", err)
	}
	for _, row := range grants {
		g := driver.Request{Status: driver.StatusGranted}
		if err := scanJSONRow(row, &g.ID, &g.SessionID, &g.ClientID, &g.CallID, &g.Token); err != nil {
			return fmt.Errorf("release: grants: %w", err)
		}
		out.grants = append(out.grants, g)
	}
	return nil
}

// decodeNumbers decodes JSON into v keeping numbers exact (json.Number:
// ids and tokens are 64-bit).
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// scanJSONRow copies a decoded JSON array's elements into dest (*string
// or *int64, one per element).
func scanJSONRow(row []any, dest ...any) error {
	if len(row) != len(dest) {
		return fmt.Errorf("%d values, want %d", len(row), len(dest))
	}
	for i, v := range row {
		switch d := dest[i].(type) {
		case *string:
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("value %d: %v is not a string", i, v)
			}
			*d = s
		case *int64:
			// MariaDB's JSON_ARRAY writes some integers (a procedure's
			// variables) as strings.
			var text string
			switch x := v.(type) {
			case json.Number:
				text = x.String()
			case string:
				text = x
			default:
				return fmt.Errorf("value %d: %v is not a number", i, v)
			}
			x, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				return fmt.Errorf("value %d: %w", i, err)
			}
			*d = x
		}
	}
	return nil
}

// identLock takes an identifier's InnoDB row lock in the transaction on
// q, creating the row when it is missing (as sqlbase's LockIdentLock).
func (d *Driver) identLock(ctx context.Context, q querier, id driver.Ident) (driver.IdentState, error) {
	st := driver.IdentState{Ident: id}
	args := []any{id.Kind, bin(id.NS), bin(id.Name)}
	lock := func() error {
		return q.QueryRowContext(ctx, d.Q("ident_lock"), args...).
			Scan(&st.Fence, &st.Readers, &st.Writers, &st.Waiting, &st.Gated)
	}
	err := lock()
	if errors.Is(err, sql.ErrNoRows) {
		if _, err = q.ExecContext(ctx, d.Q("ident_ensure"), args...); err != nil {
			return st, fmt.Errorf("ident_ensure: %w", err)
		}
		err = lock()
	}
	if err != nil {
		return st, fmt.Errorf("ident_lock: %w", err)
	}
	return st, nil
}

// adopt runs under the identifier's row lock (st, in the transaction on
// q): from now on the slow path owns the identifier (fast_engage), its
// fast holder, if any, becomes a request row under its own id, and the
// InnoDB fence and counters count what happened outside InnoDB. It
// returns the id of the holder it adopted (0: none), whose fast row the
// caller clears once the transaction has committed (clearAdopted).
func (d *Driver) adopt(ctx context.Context, q querier, st *driver.IdentState) (int64, error) {
	id := st.Ident
	res, err := q.ExecContext(ctx, d.Q("fast_engage"), id.Kind, bin(id.NS), bin(id.Name), st.Fence)
	if err != nil {
		return 0, fmt.Errorf("fast_engage: %w", err)
	}
	if more, err := res.LastInsertId(); err != nil || more == 0 {
		return 0, err
	}
	var fence int64
	var hid, call, at sql.NullInt64
	var sess, client, mode sql.NullString
	err = q.QueryRowContext(ctx, d.Q("fast_holder"), id.Kind, bin(id.NS), bin(id.Name)).
		Scan(&fence, &hid, &sess, &client, &mode, &call, &at)
	if err != nil {
		return 0, fmt.Errorf("fast_holder: %w", err)
	}
	changed := fence > st.Fence
	st.Fence = max(st.Fence, fence)
	if hid.Valid {
		res, err := q.ExecContext(ctx, d.Q("fast_adopt"), hid.Int64, sess.String, client.String,
			id.Kind, bin(id.NS), bin(id.Name), mode.String, call.Int64, fence, at.Int64, at.Int64)
		if err != nil {
			return 0, fmt.Errorf("fast_adopt: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if n == 1 {
			nr, nw := sqlbase.ModeCounts(driver.LockMode(mode.String))
			st.Readers, st.Writers, changed = st.Readers+int64(nr), st.Writers+int64(nw), true
		}
	}
	if changed {
		if _, err := q.ExecContext(ctx, d.Q("ident_update"), st.Fence, st.Readers, st.Writers, st.Waiting,
			id.Kind, bin(id.NS), bin(id.Name)); err != nil {
			return 0, fmt.Errorf("ident_update: %w", err)
		}
	}
	return hid.Int64, nil
}

// clearAdopted marks holders whose adoption committed (ids; zeros are
// skipped) as adopted (fast_adopted). Best effort: a holder left unmarked
// costs the next adoption a look, nothing else.
func (d *Driver) clearAdopted(ctx context.Context, ids ...int64) {
	_ = d.holdersGone(context.WithoutCancel(ctx), d.SQL, "fast_adopted", ids)
}

// clearHolders clears the fast rows of holders among deleted requests
// (ids), in the deleting transaction on q.
func (d *Driver) clearHolders(ctx context.Context, q querier, ids []int64) error {
	return d.holdersGone(ctx, q, "fast_clear_ids", ids)
}

// holdersGone runs query (fast_clear_ids or fast_adopted) on q for the
// negative ids among ids (request rows' ids are positive: nothing to do
// without a fast one).
func (d *Driver) holdersGone(ctx context.Context, q querier, query string, ids []int64) error {
	var held []any
	for _, id := range ids {
		if id < 0 {
			held = append(held, id)
		}
	}
	if len(held) == 0 {
		return nil
	}
	if _, err := q.ExecContext(ctx, list(d.Q(query), len(held)), held...); err != nil {
		return fmt.Errorf("%s: %w", query, err)
	}
	return nil
}

// adoptInTx is the dialect's Adopt hook: adopt in the engine's
// transaction, the holder's fast row cleared after its commit.
func (d *Driver) adoptInTx(ctx context.Context, t *sqlbase.Tx, st *driver.IdentState) error {
	adopted, err := d.adopt(ctx, t.Tx, st)
	if adopted != 0 {
		t.AfterCommit(func() { d.clearAdopted(ctx, adopted) })
	}
	return err
}

// demoteAfter is the dialect's Updated hook: an identifier the slow path
// left with nothing in InnoDB goes back to the fast path once the
// transaction has committed.
func (d *Driver) demoteAfter(ctx context.Context, t *sqlbase.Tx, st driver.IdentState) {
	if st.Readers == 0 && st.Writers == 0 && st.Waiting == 0 && !st.Gated {
		t.AfterCommit(func() { _, _ = d.demote(context.WithoutCancel(ctx), st.Ident) })
	}
}

// clearDeleted is the dialect's Deleted hook: the fast holders among
// deleted requests (negative ids) are gone too, in the same transaction.
func (d *Driver) clearDeleted(ctx context.Context, t *sqlbase.Tx, ids []int64) error {
	return d.clearHolders(ctx, t.Tx, ids)
}

// purgeIdle is the dialect's PurgeIdle hook: the idle identifiers
// (ident_purge_idle) each deleted under its mutex by {p}purge_ident, in
// t's transaction, or in one of its own (txn.InTx) when t has none
// (NoTx: an autocommit statement would let the mutex go before the
// delete).
func (d *Driver) purgeIdle(ctx context.Context, t *sqlbase.Tx) (n int, err error) {
	if t.Tx == nil {
		err = txn.InTx(ctx, d, func(tx driver.Tx) (err error) {
			n, err = tx.LockIdentPurgeIdle(ctx)
			return err
		})
		return n, err
	}
	ids, err := d.idents(ctx, "ident_purge_idle")
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		var gone int
		if err := t.Tx.QueryRowContext(ctx, d.Q("purge_ident"), id.Kind, bin(id.NS), bin(id.Name)).Scan(&gone); err != nil {
			return n, fmt.Errorf("purge_ident: %w", err)
		}
		n += gone
	}
	return n, nil
}

// Maintain implements driver.Driver: besides the shared upkeep, the slow
// path hands idle identifiers back to the fast path and free fast rows
// are deleted.
func (d *Driver) Maintain(ctx context.Context) error {
	if err := d.DB.Maintain(ctx); err != nil {
		return err
	}
	if err := d.demoteIdle(ctx); err != nil {
		return err
	}
	if _, err := d.ExecNamed(ctx, nil, "fast_purge_idle"); err != nil {
		return fmt.Errorf("fast_purge_idle: %w", err)
	}
	return nil
}

// demoteIdle hands identifiers the slow path owns back to the fast path
// when nothing of them is left in InnoDB, each under its row lock.
func (d *Driver) demoteIdle(ctx context.Context) error {
	ids, err := d.idents(ctx, "fast_idle_slow")
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := d.demote(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// demote hands one identifier back to the fast path if nothing of it is
// left in InnoDB. A read without a lock comes first: while anyone holds,
// waits or gates, there is nothing to hand back, and the check under the
// row lock queued behind every transaction on the identifier (a reader's
// release beside other readers ran it each time, holding the row for
// four round trips: TestDemoteLocksOnlyFree). A release that empties the
// row after the read runs demote itself, and the upkeep demotes what is
// left. demoted says whether the fast path owns the identifier now
// because of this call.
func (d *Driver) demote(ctx context.Context, id driver.Ident) (demoted bool, err error) {
	args := []any{id.Kind, bin(id.NS), bin(id.Name)}
	var free int
	if err := d.SQL.QueryRowContext(ctx, d.Q("fast_demote_free"), args...).Scan(&free); err != nil {
		return false, fmt.Errorf("fast_demote_free: %w", err)
	}
	if free == 0 {
		return false, nil
	}
	return d.demoteLocked(ctx, id)
}

// demoteLocked is demote after its read without a lock said the
// identifier is free: under the row lock, fast_demote_check decides.
func (d *Driver) demoteLocked(ctx context.Context, id driver.Ident) (demoted bool, err error) {
	args := []any{id.Kind, bin(id.NS), bin(id.Name)}
	tx, err := d.SQL.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := d.identLock(ctx, tx, id); err != nil {
		return false, err
	}
	var fence int64
	switch err := tx.QueryRowContext(ctx, d.Q("fast_demote_check"), args...).Scan(&fence); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("fast_demote_check: %w", err)
	}
	res, err := tx.ExecContext(ctx, d.Q("fast_demote"), append([]any{fence}, args...)...)
	if err != nil {
		return false, fmt.Errorf("fast_demote: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n == 1, tx.Commit()
}

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
