package driver

import (
	"context"
	"errors"
	"time"
)

// Lock kinds: the locking service and MySQL-style user-level locks have
// separate identifier spaces.
const (
	KindService int = 0
	KindUser    int = 1
)

// LockMode is a lock mode as stored in the database.
type LockMode string

// Lock modes.
const (
	ModeRead  LockMode = "R"
	ModeWrite LockMode = "W"
)

// RequestStatus is a lock request's status as stored in the database; ""
// answers a waiter whose request vanished.
type RequestStatus string

// Request statuses.
const (
	StatusGranted  RequestStatus = "G"
	StatusPending  RequestStatus = "P"
	StatusDeadlock RequestStatus = "D" // a pending request chosen as a deadlock victim
)

// Ident names one lock: kind, namespace and name, compared byte for byte.
type Ident struct {
	Kind int
	NS   string
	Name string
}

// Within reports whether a is in scope: scope's identifier, or any name of
// scope's kind and namespace when scope's Name is empty (as a release
// names them: FastReleaseParams).
func (a Ident) Within(scope Ident) bool {
	return a.Kind == scope.Kind && a.NS == scope.NS && (scope.Name == "" || a.Name == scope.Name)
}

// Compare is Less as a comparison (-1, 0, +1), for slices.SortFunc.
func (a Ident) Compare(b Ident) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}

// Less orders identifiers canonically; every multi-identifier operation takes
// row locks in this order so that baton's own transactions never deadlock on
// each other inside the database.
func (a Ident) Less(b Ident) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.NS != b.NS {
		return a.NS < b.NS
	}
	return a.Name < b.Name
}

// Request is one row of the lock table: a granted instance or a waiting
// request.
type Request struct {
	ID        int64
	SessionID string
	ClientID  string
	Ident
	Mode      LockMode
	Status    RequestStatus
	CallID    int64
	Token     int64
	CreatedAt time.Time
	GrantedAt time.Time
	// Inline is set on an instance LockFastAcquire or LockFastAcquireMany
	// stored without a request row of its own (PostgreSQL keeps a free
	// lock's first holder in the lock's row); see
	// FastReleaseParams.InlineOnly.
	Inline bool
}

// IdentState is the lock row of an identifier: its fencing counter and the
// counts of granted readers, granted writers and waiting requests, which let
// the uncontended fast path decide with one row lock.
type IdentState struct {
	Ident
	Fence   int64
	Readers int64
	Writers int64
	Waiting int64
	// Gated is set once a transaction has taken the identifier's gate
	// (TxLocker): its grants then go through the engine's slow path, which
	// asks TxGateHeld.
	Gated bool
}

// LockInfo is one row of the monitoring view: a request joined with its
// session's owner.
type LockInfo struct {
	Request
	Host  string
	PID   int
	Owner string // the session's name
}

// Locks is the locks slice of a backend, outside any transaction
// (LocksTx has the statements inside one): the fast paths, the shortcuts
// of the slow path, turnstiles and transaction-scoped locks. Where a
// backend has no shortcut, a capability says so (AcquiresMany,
// RemovesInOneCall, ReleasesInTx) or its call answers that the engine
// must do it (handled false, ErrRequestInTx).
type Locks interface {
	// LockRequestStatuses reads the requests with the given ids, outside
	// any transaction; missing ids are absent from the map.
	LockRequestStatuses(ctx context.Context, ids []int64) (map[int64]Request, error)
	// LockRequestStatusesGated is LockRequestStatuses, and the
	// identifiers of the requests found that are gated, in the same
	// statement: the client's poll of its waiting requests is one
	// statement per interval (DESIGN, Notifications). A backend whose
	// gates are serial (TxGateSerial) finds none.
	LockRequestStatusesGated(ctx context.Context, ids []int64) (map[int64]Request, []Ident, error)

	// LockConflictHeld reports, outside any transaction, whether a
	// session other than sessionID holds a granted instance of id that
	// conflicts with mode (a writer, or any instance when mode is write):
	// a request of sessionID in mode would be refused now whatever the
	// queue. It writes and locks nothing, so a false answer decides
	// nothing.
	LockConflictHeld(ctx context.Context, sessionID string, id Ident, mode LockMode) (bool, error)

	// LockFastAcquire grants one uncontended lock in a single short
	// transaction when nobody holds a conflicting lock and nobody waits on
	// the identifier. ok is false when the slow path must decide.
	LockFastAcquire(ctx context.Context, p FastAcquireParams) (r Request, ok bool, err error)

	// LockFastRelease deletes the session's granted instances matching
	// kind, namespace and (when name is non-empty) name, keeping the
	// identifier counters right. It returns how many instances it deleted
	// and the identifiers that have waiters, which the engine must then
	// re-examine with the slow path.
	LockFastRelease(ctx context.Context, p FastReleaseParams) (n int, waiting []Ident, err error)

	// LockRegrant grants what can be granted on each identifier and wakes
	// the clients it granted, as the engine's own re-examination would, in
	// fewer round trips. handled is false when the backend has no such
	// shortcut; the engine then does it in a transaction of its own.
	LockRegrant(ctx context.Context, ids []Ident) (handled bool, err error)

	// AcquiresMany reports whether the backend takes several uncontended
	// names of one namespace in one round trip, all or none
	// (LockFastAcquireMany); the engine calls that only when it does.
	AcquiresMany() bool
	// LockFastAcquireMany grants p's mode on every name (distinct, of
	// p.Kind and p.NS; p.Name is ignored) or on none (ok false: the caller
	// takes the slow path name by name). The requests are in names' order.
	LockFastAcquireMany(ctx context.Context, p FastAcquireParams, names []string) (rs []Request, ok bool, err error)

	// LockRequest takes the slow path of one lock request in one call to
	// the server: under the identifier's row lock, check that the session
	// is live, decide by internal/lockcore.Grants' rule whether the
	// request is granted now, and store it, granted (status and token set)
	// or waiting, with the identifier's counters. A backend without such a
	// call answers ErrRequestInTx, and the engine does the same in a
	// transaction of several statements.
	//
	// LockRequest returns the stored request; ErrWouldWait (nothing
	// stored) when p.TryOnce is set and the request would wait;
	// ErrNoSession when the database no longer has a live session
	// p.SessionID of p.ClientID; ErrRequestInTx (nothing stored) when
	// the engine must decide in its own transaction (an identifier a
	// transaction gated, on a backend whose call does not see gates).
	LockRequest(ctx context.Context, p RequestParams) (Request, error)

	// RemovesInOneCall reports whether the backend withdraws requests in
	// one call to the server (LockRequestsRemove, LockCallWithdraw): the
	// requests of an undone call, an ended session or orphans deleted, and
	// what that frees granted, as the engine's transaction would (its
	// identifiers' rows locked first, in Ident.Less order), committed by
	// the call. When it does not, the engine never calls them and does the
	// same in a transaction of several statements.
	RemovesInOneCall() bool
	// LockRequestsRemove deletes the requests rs names that are still
	// there, whatever their status by now, grants what that frees and
	// wakes the grants' clients. handled is false when nothing was done
	// and the engine must do it in its own transaction (an identifier a
	// transaction gated, on a backend whose call does not see gates).
	LockRequestsRemove(ctx context.Context, rs []Request) (handled bool, err error)

	// LockCallWithdraw is LockRequestsRemove for the requests of one lock
	// call (session, call id) on ids (sorted, one kind and namespace),
	// which it finds itself: the undo of a failed call. Without settle,
	// no statement of the call runs any more, so that its requests can no
	// longer change, and a call that stored nothing costs a read. With
	// settle, a statement of the call may still run in the server (its
	// client was cut off): every identifier's row is locked first, in
	// order (created when missing, its fast holder adopted, as the
	// engine's LockIdentLock does), so that such a statement, which holds
	// or waits for one of them, has ended before the requests are looked
	// for.
	LockCallWithdraw(ctx context.Context, sessionID string, callID int64, ids []Ident, settle bool) (handled bool, err error)

	// ReleasesInTx reports whether the backend's release can run in a
	// transaction of the engine's (LockReleaseTx), for a backend without a
	// LockRegrant shortcut: a release that frees a lock others wait for
	// then grants them before its one commit, instead of committing twice.
	// The engine calls LockReleaseTx only when it does.
	ReleasesInTx() bool
	// LockReleaseTx is LockFastRelease inside tx: the same deletions and
	// counters, and the same answer, committed with tx.
	LockReleaseTx(ctx context.Context, tx Tx, p FastReleaseParams) (n int, waiting []Ident, err error)

	// AdoptsHolders reports whether another session's call may move the
	// backend's inline holders (Request.Inline) into request rows that a
	// release with FastReleaseParams.InlineOnly set would not look for
	// (MySQL/MariaDB adopt a fast holder into InnoDB, and a release of one
	// instance clears what told the fast release to look there). The
	// engine then sets InlineOnly only where the session never stored a
	// row, not where a release of its newest instances left the inline
	// holder alone.
	AdoptsHolders() bool

	Turnstiles
	TxLocker
}

// LocksTx is the locks part of Tx.
type LocksTx interface {
	// LockIdentLock creates the identifiers' lock rows if needed and locks
	// them for the rest of the transaction; ids must be sorted and unique.
	LockIdentLock(ctx context.Context, ids []Ident) ([]IdentState, error)

	// LockIdentUpdate stores an identifier's fence and counters.
	LockIdentUpdate(ctx context.Context, st IdentState) error

	// LockRequestList lists every request on the identifiers, oldest first.
	LockRequestList(ctx context.Context, ids []Ident) ([]Request, error)

	// LockRequestListBySession lists a session's requests; kind < 0 means
	// every kind and an empty ns every namespace.
	LockRequestListBySession(ctx context.Context, sessionID string, kind int, ns string) ([]Request, error)

	// LockRequestListOrphans lists requests whose session no longer exists.
	LockRequestListOrphans(ctx context.Context, limit int) ([]Request, error)

	// LockRequestListCall lists the requests of one call among ids, the
	// call's identifiers (sorted, one kind and namespace, as every call's
	// are): the read covers their key range only, not every lock row.
	LockRequestListCall(ctx context.Context, sessionID string, callID int64, ids []Ident) ([]Request, error)

	// LockRequestInsert stores a request and returns its id.
	LockRequestInsert(ctx context.Context, r Request) (int64, error)

	// LockRequestSetStatus changes a request's status and token; it
	// changes nothing and returns false when the request's status is not
	// from.
	LockRequestSetStatus(ctx context.Context, id int64, from, to RequestStatus, token int64) (bool, error)

	// LockRequestDelete deletes requests by id.
	LockRequestDelete(ctx context.Context, ids []int64) error

	// LockRequestStatuses returns the status of each request that still
	// exists.
	LockRequestStatuses(ctx context.Context, ids []int64) (map[int64]Request, error)

	// LockWaitGraph returns every pending request and every request on an
	// identifier that has a pending request, oldest first. The caller holds
	// the deadlock detector's lock (LockDetectorLock).
	LockWaitGraph(ctx context.Context) ([]Request, error)

	// LockDetectorLock serializes deadlock detection across processes for
	// the rest of the transaction.
	LockDetectorLock(ctx context.Context) error

	// LockInfoList returns every request with its session's owner.
	LockInfoList(ctx context.Context) ([]LockInfo, error)

	// LockIdentPurgeIdle deletes lock rows that nobody holds or waits for.
	// Fencing stays monotonic because a new lock row starts its counter at
	// the database clock in microseconds.
	LockIdentPurgeIdle(ctx context.Context) (int, error)

	// LockUserHolder returns the session holding a user-level lock.
	LockUserHolder(ctx context.Context, name string) (string, bool, error)

	// WakeClients asks the backend to wake clients once this transaction
	// commits: each entry names one (ClientID). An entry with an ID is a
	// grant this transaction made (ID, SessionID, CallID, Status granted
	// and Token set), which the client's waiter may take as it is, with no
	// status read; an entry without one asks the client to look.
	WakeClients(ctx context.Context, wake []Request) error
}

// Turnstiles are the part of Locks that lets a contended write lock be
// waited for inside the server (in the process, on SQLite): a session's turnstile on an identifier is
// a server-side lock held on a connection of the session's own (its
// line) while the session holds, or waits in the table for, the lock, so
// that the next contender sleeps in the server's lock queue and is woken
// there by the release. A turnstile decides nothing: the lock is still
// granted by the table's rule, and a turnstile kept or lost by mistake
// costs a wait of at most the bound given, never a lock held twice. The
// driver lets a session's turnstiles go when its releases name them
// (LockFastRelease), when LockTurnstileDrop or LockTurnstileEnd says so,
// and when the line fails.
type Turnstiles interface {
	// LockTurnstileAcquire waits at most wait (0: takes it only if it is
	// free) for the turnstile of p's identifier, on the session's line,
	// then takes the write lock by the uncontended path's rule. ok:
	// granted (as LockFastAcquire's grants, Inline set); refused, the
	// session keeps the turnstile if it got it, while it waits in the
	// table. waited: another session had the turnstile when asked for.
	// usable false: the session has no line (the backend is behind a
	// transaction pooler with no direct DSN, the lines are all in use, or
	// the line is busy with another call of the session); nothing was done.
	LockTurnstileAcquire(ctx context.Context, p FastAcquireParams, wait time.Duration) (r Request, ok, waited, usable bool, err error)
	// LockTurnstileDrop lets the session's turnstile on id go, if it
	// holds it (its call failed).
	LockTurnstileDrop(ctx context.Context, sessionID string, id Ident)
	// LockTurnstileEnd closes the session's line, which lets all its
	// turnstiles go (the session ended).
	LockTurnstileEnd(sessionID string)
	// LockTurnstileHeld reports whether the session holds a turnstile in
	// scope (one name, or a namespace when its Name is empty): its
	// release is then LockFastRelease's, which lets them go.
	LockTurnstileHeld(sessionID string, scope Ident) bool
	// LockTurnstileWaiting records (on) or forgets that p's call waits
	// behind the turnstile of p's identifier past the first bound, for
	// monitoring only: LockInfoList lists it as a waiting write request;
	// nothing that grants or detects deadlocks reads it.
	LockTurnstileWaiting(ctx context.Context, p FastAcquireParams, on bool) error
}

// TxLocker is the part of Locks for transaction-scoped locks (DESIGN § Locks). A
// transaction holds an identifier's gate, a lock of the database's own
// taken in the caller's transaction (so its commit or rollback releases
// it), and gates and sessions' instances exclude each other: TxPrepare
// marks the identifier Gated (committed), so that the fast paths leave it
// to grants made under the identifier's row lock, which ask TxGateHeld;
// the transaction checks the mark and the sessions' instances once it
// holds the gate, from a snapshot taken after.
type TxLocker interface {
	// TxGateSerial reports whether a transaction that took a gate
	// excludes every other writer of the database (SQLite, where the gate
	// is the write lock): no session can then release, and TxGate keeps
	// the gate when it answers ErrGateSession.
	TxGateSerial() bool
	// TxGateChecks reports whether TxGate checks the sessions itself (in
	// most cases; it says so in its answer): when not, the engine also
	// checks before taking the gate, so as not to hold it while a session
	// does (a backend that cannot give a gate back keeps it until the
	// transaction ends).
	TxGateChecks() bool
	// TxPrepare readies id for a gate, outside any transaction: marks it
	// Gated, and creates what the gate locks. The engine calls it when
	// TxGate answers ErrGateUngated, and after a gate taken unchecked.
	TxPrepare(ctx context.Context, id Ident) error
	// TxGate takes id's gate in mode inside the caller's transaction,
	// waiting at most wait (0: not at all; negative: until ctx ends).
	// With check, checked reports that it also found id gated and no
	// session holding or waiting for it in a conflicting mode (otherwise
	// the engine marks and checks).
	TxGate(ctx context.Context, tx CallerTx, id Ident, mode LockMode, wait time.Duration, check bool) (checked bool, err error)
	// TxGateHeld returns the mode in which transactions hold id's gate,
	// or "" when none does; tx holds id's row lock, and the answer must
	// stay true until tx ends.
	TxGateHeld(ctx context.Context, tx Tx, id Ident) (LockMode, error)
	// TxGatedAmong returns the identifiers among ids that are gated, in
	// one statement, outside any transaction: a session's request waiting
	// on a gated identifier must be re-examined from time to time, as
	// nothing announces a transaction's end (the client's poll of its
	// waiting requests' names).
	TxGatedAmong(ctx context.Context, ids []Ident) ([]Ident, error)
	// TxHoldCaller runs in the caller's transaction once it holds h's
	// gate, for a backend that records holds there for TxHolds (MySQL).
	TxHoldCaller(ctx context.Context, tx CallerTx, h TxHold) error
	// TxHolds lists the gates transactions hold or wait for (SessionID
	// names the transaction, ClientID is empty).
	TxHolds(ctx context.Context) ([]LockInfo, error)
}

// FastAcquireParams are the inputs of Locks.LockFastAcquire.
type FastAcquireParams struct {
	SessionID string
	ClientID  string
	Ident
	Mode   LockMode
	CallID int64
	// Incarnation is the lock state's incarnation the session began in
	// (see Sessions.Incarnation); 0 where it survives a crash.
	Incarnation int64
}

// RequestParams are the inputs of Locks.LockRequest.
type RequestParams struct {
	SessionID string
	ClientID  string
	Ident
	Mode    LockMode
	CallID  int64
	TryOnce bool
	// Covered: by the engine's hint (its record of the session's
	// grants), the session holds the identifier in a mode that covers
	// this request, so the rule grants it at once; a hint, never an
	// answer: the backend may look for that instance first, and decides
	// by the rule when it finds none.
	Covered bool
}

// FastReleaseParams are the inputs of Locks.LockFastRelease.
type FastReleaseParams struct {
	SessionID string
	Kind      int
	NS        string
	Name      string // empty: every name in the namespace
	Limit     int    // 0: all matching instances; 1: one instance (RELEASE_LOCK); only with a Name
	// InlineOnly tells the backend that every instance the session may
	// hold in scope was granted with Request.Inline set: it has no
	// request row to look for. The engine sets it only when that is
	// certain.
	InlineOnly bool
	// RowsOn, when set (InlineOnly unset, no Limit), is the only name in
	// scope on which the session may have request rows: its instances
	// elsewhere in scope can only be inline holders. A backend may then
	// release the rows by that name, without looking for the names first.
	// The engine sets it only when that is certain.
	RowsOn string
	// Contended, when set, is called with each identifier the release
	// handed on to a waiter itself (a backend that reports waiting
	// identifiers instead need not call it): the engine remembers it as
	// contended, so that the releasing client's next call on it goes
	// through its turnstile.
	Contended func(Ident)
}

// ErrPartialGrant is LockFastAcquireMany's answer when it granted some of
// the names and could not withdraw them: the engine removes the call's
// requests (as for a failed call) and takes the names one by one.
var ErrPartialGrant = errors.New("some names of a many-name acquire were granted and could not be withdrawn")

// ErrWouldWait is LockRequest's answer to a request that would wait, made
// with TryOnce.
var ErrWouldWait = errors.New("the lock request would wait")

// ErrRequestInTx is LockRequest's answer when the engine must decide the
// request in its own transaction.
var ErrRequestInTx = errors.New("the lock request must be decided in the engine's transaction")

// ErrNoSession is LockRequest's answer when the session is not in the
// database (its lease ran out, or a crash emptied the lock state).
var ErrNoSession = errors.New("the session is not in the database")

// ErrServerRestarted is returned by LockFastAcquire when a server crash
// emptied the lock state after the session began: the session is gone with
// it and must be given up.
var ErrServerRestarted = errors.New("a database server crash emptied the lock state after the session began")

// CallerTx runs statements in the caller's own transaction
// (Client.LockTx).
type CallerTx interface {
	Exec(ctx context.Context, query string, args ...any) error
	ScanRow(ctx context.Context, query string, args []any, dest ...any) error
}

// TxHold is a lock a transaction holds, recorded for monitoring.
type TxHold struct {
	Ident
	Mode  LockMode
	Host  string
	PID   int
	Owner string
}

// TxGate's failures: the gate was not free in time (ErrGateBusy); the
// database found a cycle of transactions waiting for each other and
// aborted this wait (ErrGateDeadlock; on MySQL and MariaDB InnoDB rolls
// the caller's whole transaction back); a session holds the identifier,
// or waits for it, in a conflicting mode (ErrGateSession: the gate was
// given back, except where TxGateSerial).
var (
	ErrGateBusy     = errors.New("baton/driver: gate busy")
	ErrGateDeadlock = errors.New("baton/driver: deadlock among transactions")
	ErrGateSession  = errors.New("baton/driver: a session holds the lock")
	// ErrGateUngated: the identifier is not gated yet (or has no gate to
	// lock); nothing was taken: TxPrepare, then TxGate again.
	ErrGateUngated = errors.New("baton/driver: identifier not gated")
)
