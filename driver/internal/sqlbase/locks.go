package sqlbase

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/driver"
)

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
