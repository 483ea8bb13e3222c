// Package driver defines the interface between baton's engine (the root
// package) and one database backend. Each backend lives in its own package
// below this one (driver/sqlite, driver/postgres, driver/mysql) and asserts at
// compile time that it satisfies Driver.
//
// The engine owns the semantics (who gets a lock, who is a deadlock victim);
// a driver owns the SQL. Methods are verb-first and grouped by noun
// (SessionInsert, LockRequestList, ...) so that a reviewer can compare one
// backend's query with another's by name. Differences between dialects are
// expressed as driver methods with the same meaning, never as a switch on the
// dialect in feature code.
package driver

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"
)

// ErrNoRows is returned by single-row lookups that found nothing.
var ErrNoRows = errors.New("baton/driver: no rows")

// ErrBadDSN is wrapped by a backend's Open for a DSN (or a file it names)
// it cannot use: the fix is in the DSN, not in the database.
var ErrBadDSN = errors.New("baton: bad DSN")

// ErrNoSchema is returned by Migrate when the schema that is to hold
// baton's tables (PostgreSQL's search_path) does not exist.
var ErrNoSchema = errors.New("baton: schema does not exist")

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

// Session is one row of the session table.
type Session struct {
	ID       string
	ClientID string
	Host     string
	PID      int
	Name     string
	// HostID names the boot and PID namespace of the session's process
	// (empty when unknown): processes with the same HostID can check
	// whether PID is alive.
	HostID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SessionRef is a session that may be reaped: its lease ran out (Expired),
// or its process runs on the caller's host and may be checked by PID.
type SessionRef struct {
	ID      string
	PID     int
	Expired bool
}

// LockInfo is one row of the monitoring view: a request joined with its
// session's owner.
type LockInfo struct {
	Request
	Host  string
	PID   int
	Owner string // the session's name
}

// Driver is one backend.
type Driver interface {
	// Name is the backend's short name: "sqlite", "postgres" or "mysql".
	Name() string
	// Close releases the driver's connections.
	Close() error

	// Migrate applies pending migrations; safe when several processes call
	// it at the same moment.
	Migrate(ctx context.Context) ([]MigrationStatus, error)
	// MigrationStatus lists every known migration and whether it is applied.
	MigrationStatus(ctx context.Context) ([]MigrationStatus, error)

	// IsRetryable reports whether err is a transient conflict inside the
	// database (deadlock between baton's own statements, serialization
	// failure, busy file) after which the whole transaction can run again.
	IsRetryable(err error) bool

	// LockRequestStatuses reads the requests with the given ids, outside
	// any transaction; missing ids are absent from the map.
	LockRequestStatuses(ctx context.Context, ids []int64) (map[int64]Request, error)
	// CallerQueueTx returns the queue control statements that run in the
	// program's own transaction c.
	CallerQueueTx(c CallerStatements) CallerQueueTx
	// QueuesReady returns which of queues (registered, not paused) have
	// a waiting message due now, outside any transaction, whatever the
	// mode or kind of their consumers: a consumer it wakes may still find
	// nothing it may claim. It is the poll of a client's waiting consumers
	// (one statement for all of them, every five poll intervals while any
	// waits), so it reads at most one index entry per queue that has one
	// due.
	QueuesReady(ctx context.Context, queues []string) ([]string, error)

	// Prepare readies the driver's statements once the schema exists; the
	// client calls it after migrating.
	Prepare(ctx context.Context) error

	// NoTx returns a Tx whose methods each run as a statement of its own,
	// outside any transaction: for operations that are one statement.
	NoTx() Tx
	// Relaxed is NoTx for statements whose loss in a database crash can
	// only cause a message to be delivered again (claims, acknowledgements,
	// retries, lease extensions): a backend may commit them without
	// waiting for the disk. Never used for enqueueing.
	Relaxed() Tx

	// Begin starts a transaction in which baton's lock rows can be locked.
	// On SQLite it takes the write lock at once (BEGIN IMMEDIATE).
	Begin(ctx context.Context) (Tx, error)

	// SessionHeartbeat renews the named sessions whose lease has not run
	// out (returning how many it renewed; an expired session is never
	// revived) and lists other clients' sessions that may be reaped, in as
	// few statements as the backend allows.
	SessionHeartbeat(ctx context.Context, p HeartbeatParams) (renewed int, reapable []SessionRef, err error)

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

	// Listen starts the backend's wake-up mechanism for one client; see
	// ListenParams. The returned stop function ends listening.
	Listen(ctx context.Context, p ListenParams) (stop func(), err error)
	// SetWaiting tells the listener whether the client currently has lock
	// waiters, so that backends with a cheap change check can poll it fast
	// only when someone waits.
	SetWaiting(clientID string, waiting bool)
	// SetNotifying tells the listener whether the client has notification
	// listeners: only then does it read notifications, and backends with a
	// cheap change check poll it fast.
	SetNotifying(clientID string, on bool)

	// Notify sends a notification in a transaction of its own; listeners
	// get it once it commits.
	Notify(ctx context.Context, channel, payload string) error
	// Maintain does periodic housekeeping (old notifications); every
	// client calls it about once a minute.
	Maintain(ctx context.Context) error

	// QueueRegisterStatement registers a queue inside the caller's
	// transaction.
	QueueRegisterStatement(name string) (query string, args []any)

	// EnqueueStatement is the statement that inserts a message inside the
	// caller's transaction, with its arguments; returnsID says whether it
	// returns the new id as a row (otherwise: the result's LastInsertId).
	EnqueueStatement(m NewMessage) (query string, args []any, returnsID bool)

	// UniqueStatements are the statements that reserve the unique key of
	// queue (expiring at expiresAt, microseconds; 0 for none) inside the
	// caller's transaction.
	UniqueStatements(queue, key string, expiresAt int64) UniqueStatements

	// WaitingStatement is the statement that lists the waiting messages of
	// a kind in a queue inside the caller's transaction: rows of id and
	// payload, in claim order.
	WaitingStatement(queue, kind string) (query string, args []any)

	// CompleteStatements are the statements that complete a claim inside
	// the caller's transaction: to the history when keep is set, deleted
	// otherwise. The last one affects one row when the claim was current,
	// none otherwise.
	CompleteStatements(c Claim, keep bool) []Statement

	// NotifyStatement is the statement that sends a notification inside
	// the caller's transaction, with its arguments.
	NotifyStatement(channel, payload string) (query string, args []any)

	// Uninstall lists baton's objects in the database, from its catalog,
	// and removes them when p.Remove is set (see UninstallReport), in one
	// transaction where the backend's DDL is transactional; it refuses
	// with ErrSessionsAlive while sessions hold a live lease, unless
	// p.Force. Objects that merely carry the prefix are kept.
	Uninstall(ctx context.Context, p UninstallParams) (UninstallReport, error)

	// SetStatementTimeout bounds each statement whose context has no
	// deadline, on a backend with a database server, so that a server that
	// stops answering once connected fails the statement instead of
	// hanging it (internal/stmtbound; 30s until set; 0 restores it, a
	// negative timeout bounds nothing). Waits in the server by design are
	// bounded by their wait plus a margin, migrations not at all. SQLite
	// has no server: a no-op there.
	SetStatementTimeout(d time.Duration)
	// LimitConns bounds the backend's pools of server connections to n
	// (Options.MaxConns), before the client runs statements; the
	// listener's connection is not counted. SQLite: a no-op.
	LimitConns(n int)
}

// ListenParams configure Driver.Listen.
type ListenParams struct {
	ClientID string
	// Wake is called (from any goroutine) whenever lock state may have
	// changed for this client; it must be cheap and must not block. When
	// the backend knows exactly which requests were granted (ID, Status
	// and Token set; SessionID and CallID too where it knows them: request
	// ids can repeat, sessions and calls never), it passes them and the
	// engine needs no query; otherwise it passes nil.
	Wake func(granted []Request)
	// Notify receives every committed notification, in commit order per
	// sender, while SetNotifying is on. It must not block.
	Notify func(channel, payload string)
	// Interval is the client's poll interval: what the backend cannot be
	// told of (notifications kept in a table, other processes' commits
	// on SQLite) it looks for at least this often. Lost lock wake-ups need
	// nothing of it: the engine checks its waiting requests every interval
	// itself.
	Interval time.Duration
}

// HeartbeatParams are the inputs of Driver.SessionHeartbeat.
type HeartbeatParams struct {
	ClientID string
	HostID   string
	// SessionIDs are the sessions to renew: those the client still owns,
	// never one it has reported lost.
	SessionIDs []string
	Lease      time.Duration
	Limit      int // at most this many reapable sessions
}

// FastAcquireParams are the inputs of Driver.LockFastAcquire.
type FastAcquireParams struct {
	SessionID string
	ClientID  string
	Ident
	Mode   LockMode
	CallID int64
	// Incarnation is the lock state's incarnation the session began in
	// (see Incarnations); 0 when the driver does not implement it.
	Incarnation int64
}

// ManyAcquirer is implemented by drivers that take several uncontended
// names of one namespace in one round trip, all or none.
type ManyAcquirer interface {
	// LockFastAcquireMany grants p's mode on every name (distinct, of
	// p.Kind and p.NS; p.Name is ignored) or on none (ok false: the caller
	// takes the slow path name by name). The requests are in names' order.
	LockFastAcquireMany(ctx context.Context, p FastAcquireParams, names []string) (rs []Request, ok bool, err error)
}

// ServerStatements is implemented by drivers whose statements run in a
// database server (PostgreSQL, MySQL/MariaDB). A statement whose client
// stops waiting for it (its context ended, which closes the connection)
// may still commit in the server afterwards: a lock request or holder so
// written would outlive the withdrawal of the call that wrote it. The
// engine therefore runs the statements that change the lock state to
// their end, bounded by the lease (or the caller's deadline, when later)
// and not by the caller's context, whose deadline it keeps by bounding the waits in the server (the turnstile's)
// and by checking it between statements. An embedded database (SQLite)
// ends a cut statement before it returns, so its statements keep the
// caller's context.
type ServerStatements interface {
	StatementsInServer()
}

// Turnstiles is implemented by drivers whose contended write locks can be
// waited for inside the server: a session's turnstile on an identifier is
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

// Requester is implemented by drivers that take the slow path of one lock
// request in one call to the server: under the identifier's row lock,
// check that the session is live, decide by internal/lockcore.Grants'
// rule whether the request is granted now, and store it, granted (status
// and token set) or waiting, with the identifier's counters. The engine
// otherwise does the same in a transaction of several statements.
type Requester interface {
	// LockRequest returns the stored request; ErrWouldWait (nothing
	// stored) when p.TryOnce is set and the request would wait;
	// ErrNoSession when the database no longer has a live session
	// p.SessionID of p.ClientID; ErrRequestInTx (nothing stored) when
	// the engine must decide in its own transaction (an identifier a
	// transaction gated, on a backend whose call does not see gates).
	LockRequest(ctx context.Context, p RequestParams) (Request, error)
}

// HolderAdopter is implemented by drivers whose inline holders
// (Request.Inline) another session's call may move into request rows
// that a release with FastReleaseParams.InlineOnly set would not look
// for (MySQL/MariaDB adopt a fast holder into InnoDB, and a release of
// one instance clears what told the fast release to look there). The
// engine then sets InlineOnly only where the session never stored a row,
// not where a release of its newest instances left the inline holder
// alone.
type HolderAdopter interface {
	AdoptsHolders()
}

// RequestRemover is implemented by drivers that withdraw requests in one
// call to the server: the requests of an undone call, an ended session
// or orphans deleted, and what that frees granted, as the engine's
// transaction would (its identifiers' rows locked first, in Ident.Less
// order), committed by the call. The engine otherwise does the same in a
// transaction of several statements.
type RequestRemover interface {
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
}

// TxReleaser is implemented by drivers whose release can run in a
// transaction of the engine's (one from Begin), for backends without a
// LockRegrant shortcut: a release that frees a lock others wait for then
// grants them before its one commit, instead of committing twice.
type TxReleaser interface {
	// LockReleaseTx is LockFastRelease inside tx: the same deletions and
	// counters, and the same answer, committed with tx.
	LockReleaseTx(ctx context.Context, tx Tx, p FastReleaseParams) (n int, waiting []Ident, err error)
}

// RequestParams are the inputs of Requester.LockRequest.
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

// Incarnations is implemented by drivers whose lock state does not survive
// a server crash (PostgreSQL keeps it in UNLOGGED tables, which crash
// recovery empties). A holder from before the crash still counts itself the
// holder until its lease runs out, so after a restart no lock may be
// granted until the longest lease in use has passed since the state was
// found empty, and no session from an earlier incarnation may be granted
// one. A clean restart keeps the state and its incarnation.
type Incarnations interface {
	// Incarnation records lease as a lease in use and returns the lock
	// state's incarnation and how long from now its first grant must wait
	// (never negative).
	Incarnation(ctx context.Context, lease time.Duration) (id int64, wait time.Duration, err error)
}

// FastReleaseParams are the inputs of Driver.LockFastRelease.
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

// MigrationStatus describes one migration.
type MigrationStatus struct {
	Version   int
	Name      string
	Applied   bool
	AppliedAt time.Time
}

// Tx is a transaction on baton's tables. Every method is one statement.
type Tx interface {
	Commit() error
	Rollback() error
	QueueTx
	EventsTx

	// SessionInsert creates a session with a lease of the given length,
	// measured on the database's clock.
	SessionInsert(ctx context.Context, s Session, lease time.Duration) error
	// SessionRenew extends the lease of the named sessions whose lease has
	// not run out and returns how many it renewed.
	SessionRenew(ctx context.Context, ids []string, lease time.Duration) (int, error)
	// SessionListByClient lists the ids of a client's sessions whose lease
	// has not run out.
	SessionListByClient(ctx context.Context, clientID string) ([]string, error)
	// SessionDelete removes a session row.
	SessionDelete(ctx context.Context, id string) error
	// SessionListReapable lists other clients' sessions whose lease ran
	// out and whose HostID is hostID.
	SessionListReapable(ctx context.Context, clientID, hostID string, limit int) ([]SessionRef, error)

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
	// SessionList returns every session, oldest first.
	SessionList(ctx context.Context) ([]Session, error)
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

// Logging is implemented by backends that log (a lost LISTEN connection,
// a transaction pooler found): the client hands them its Options.Logger.
type Logging interface {
	SetLogger(l *slog.Logger)
}

// CallerStatements runs statements in the program's own transaction: a
// *sql.Tx, or an adapter of another driver's (postgres.PgxTx). ScanRow
// reports no row with an error that matches sql.ErrNoRows.
type CallerStatements interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	ScanRow(ctx context.Context, query string, args []any, dest ...any) error
}

// CallerQueueTx is the part of QueueTx that runs in the program's own
// transaction (Driver.CallerQueueTx): the client's ...Tx variants of the
// queue control calls and of a claimed message's operations.
type CallerQueueTx interface {
	QueueExists(ctx context.Context, name string) (bool, error)
	QueuePause(ctx context.Context, name string, paused bool) (bool, error)
	MessageRetryNow(ctx context.Context, queue string, id int64) (done bool, state MessageState, err error)
	MessageDeleteWaiting(ctx context.Context, queue string, id int64) (done bool, state MessageState, err error)
	MessageCancel(ctx context.Context, id int64) (state MessageState, err error)
	DeadPurge(ctx context.Context, queue string) (int, error)
	// DeadRedriveAll re-drives every dead letter of queue at once (in
	// batches DeadRedrive reads their ids first, which the caller's
	// transaction cannot): it marks them, copies the marked ones to the
	// queue, ready now, and deletes them, so that a message that dies
	// meanwhile is neither copied nor deleted.
	DeadRedriveAll(ctx context.Context, queue string) (int, error)
	// The claimed message's operations (QueueTx's).
	MessageRetry(ctx context.Context, c Claim, delay time.Duration, moveBack bool, e AttemptError) (bool, error)
	MessageFinish(ctx context.Context, c Claim, state MessageState, e *AttemptError) (bool, error)
	MessageExtend(ctx context.Context, c Claim, d time.Duration) (bool, error)
}

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

// TxLocker is a backend's transaction-scoped locks (DESIGN § Locks). A
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

// GatedStatuses is implemented by a TxLocker whose status check of the
// waiting requests can also say which of their identifiers are gated, in
// the same statement: the client's poll of its waiting requests is then
// one statement per interval (DESIGN, Notifications), where a separate
// look at the gates (TxGatedAmong) made it two.
type GatedStatuses interface {
	// LockRequestStatusesGated is LockRequestStatuses, and the
	// identifiers of the requests found that are gated.
	LockRequestStatusesGated(ctx context.Context, ids []int64) (map[int64]Request, []Ident, error)
}

// Statement is a statement with its arguments, for the caller's
// transaction.
type Statement struct {
	Query string
	Args  []any
}
