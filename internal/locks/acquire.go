package locks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/lockcore"
	"github.com/batonhq/baton/internal/txn"
)

// errSessionGone: the session's row is not in the database.
var errSessionGone = errors.New("baton: session not in the database")

// errRefused is a try's refusal by an answer that stored nothing: another
// session holds the lock against it (LockConflictHeld), or the request
// that would have waited was not stored. A call of one identifier refused
// so has nothing to withdraw (acquireAll).
var errRefused = fmt.Errorf("%w", errs.ErrTimeout)

// deadlockDelay is how long a waiting request waits before its client
// looks for a cycle it may have closed: well under the 100 ms within which
// a deadlock is reported, and longer than most waits of a busy lock.
const deadlockDelay = 20 * time.Millisecond

// turnstileWait bounds a wait in the server behind a turnstile, after
// which the call waits in the table, where the deadlock detector sees it
// and looks at once (the wait counts towards deadlockDelay): a cycle
// through turnstiles was reported 66-80 ms after it formed (TestLock-
// TurnstileDeadlock, 6 runs; 50 ms took it to 90-110). A bound too short
// sends contenders to the table whenever its queue drains slower than
// that, and there they keep later ones refused (the table's waiters go
// first): with 20 ms, 8-way contention fell back to the table's speed in
// 2 runs of 9; with 25 ms in none of 14 (docs/benchmarks.md § Turnstiles).
const turnstileWait = 25 * time.Millisecond

// turnstileSlice is how long each further wait behind a turnstile lasts
// for a call that may wait on there (mayWaitOn), which is asked again
// between slices: a session that starts another call, or is lost, goes
// to the table (or gives up) within one slice.
const turnstileSlice = 100 * time.Millisecond

// turnstileOn bounds a call's waits behind a turnstile in all: past it
// the call joins the table, which sees every holder, so that a turnstile
// held by mistake (its session neither holds nor waits for the lock)
// costs a contender at most this long, never its whole timeout.
const turnstileOn = time.Second

// Acquire takes the identifiers (sorted, one kind and namespace) for the
// session in one mode, all or none: timeout 0 tries once, a positive one
// bounds the call, a negative one waits until ctx ends. On failure the call
// holds nothing it took.
func (l *Service) Acquire(ctx context.Context, s *Session, ids []driver.Ident, mode driver.LockMode, timeout time.Duration) ([]driver.Request, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	began := time.Now()
	s.Calls.Add(1)
	rs, err := l.acquireAll(ctx, s, ids, mode, timeout)
	if err == nil {
		s.Held.Add(int64(len(rs)))
		s.Own.Granted(rs, mode)
	}
	s.Calls.Add(-1)
	ns := ""
	if ids[0].Kind == driver.KindService {
		ns = ids[0].NS
	}
	l.cfg.Observer.LockWaited(ns, time.Since(began), err == nil)
	if errors.Is(err, errs.ErrDeadlock) {
		l.cfg.Observer.Deadlock()
	}
	return rs, err
}

func (l *Service) acquireAll(ctx context.Context, s *Session, ids []driver.Ident, mode driver.LockMode, timeout time.Duration) ([]driver.Request, error) {
	tryOnce := timeout == 0
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errs.ErrTimeout)
		defer cancel()
	}
	if err := l.awaitLockable(ctx, s, tryOnce); err != nil {
		return nil, err
	}
	if tryOnce && len(ids) > 1 && l.heldAgainst(ctx, s, ids, mode) {
		return nil, errRefused // nothing tried, nothing stored
	}
	call := randomInt63()
	rs, ok, err := l.acquireMany(ctx, s, call, ids, mode)
	if err == nil && !ok {
		rs, err = l.acquireEach(ctx, s, call, ids, mode, tryOnce)
	}
	// Every grant was made before this moment; while the session is
	// live here, the database cannot have reaped it before then.
	if err == nil {
		err = s.Check()
	}
	if err != nil {
		if len(ids) == 1 {
			l.dropTurnstile(s, ids[0])
			if errors.Is(err, errRefused) {
				return nil, err // nothing stored, nothing to withdraw
			}
		}
		return nil, l.undo(s, call, ids, err)
	}
	return rs, nil
}

// acquireEach takes the identifiers one after the other.
func (l *Service) acquireEach(ctx context.Context, s *Session, call int64, ids []driver.Ident, mode driver.LockMode, tryOnce bool) ([]driver.Request, error) {
	out := make([]driver.Request, 0, len(ids))
	for _, id := range ids {
		r, err := l.acquireOne(ctx, s, call, id, mode, tryOnce, len(ids) == 1)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// undo withdraws a failed call (undoCall) and returns the error its caller
// sees: the session's end when the withdrawal gave the session up (the
// outcome of a statement cut off by a lost connection is unknown, so the
// call's requests may exist), err otherwise.
func (l *Service) undo(s *Session, call int64, ids []driver.Ident, err error) error {
	// Only a server can still run a statement whose caller has returned;
	// an embedded database (SQLite) ended it before.
	l.undoCall(s, call, ids, l.detach && inDoubt(err))
	if serr := s.Err(); serr != nil && !errors.Is(err, serr) {
		return serr
	}
	return err
}

// awaitLockable waits until the session may be granted locks: after a
// restart of a server whose lock state a crash empties, not before holders
// of the previous incarnation have stopped counting themselves holders.
func (l *Service) awaitLockable(ctx context.Context, s *Session, tryOnce bool) error {
	wait := time.Until(s.Lockable)
	if wait <= 0 {
		return nil
	}
	if tryOnce {
		return fmt.Errorf("%w: a database server crash emptied the lock state; locks are granted again in %v, once the longest lease in use has passed", errs.ErrTimeout, wait.Round(time.Millisecond))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return s.Check()
	case <-s.Done():
		return s.Err()
	case <-ctx.Done():
		return failure(ctx, s, ctx.Err())
	}
}

// manyNames returns the names of ids when one statement can take them all
// (one kind and namespace, no name twice); ok false otherwise.
func manyNames(ids []driver.Ident) (names []string, ok bool) {
	if len(ids) < 2 {
		return nil, false
	}
	names = make([]string, len(ids))
	for i, id := range ids {
		if id.Kind != ids[0].Kind || id.NS != ids[0].NS || (i > 0 && id.Name == ids[i-1].Name) {
			return nil, false // sorted: a repeated name is next to itself
		}
		names[i] = id.Name
	}
	return names, true
}

// acquireMany takes several free names of one namespace in one round trip
// where the backend can (driver.Locks.AcquiresMany); ok false sends the call
// down the name-by-name path (nothing was taken).
func (l *Service) acquireMany(ctx context.Context, s *Session, call int64, ids []driver.Ident, mode driver.LockMode) ([]driver.Request, bool, error) {
	names, one := manyNames(ids)
	if !l.many || !one {
		return nil, false, nil
	}
	s.Rows.Begin(ids...)
	sctx, cancel := l.statement(ctx)
	defer cancel()
	rs, ok, err := l.lk.LockFastAcquireMany(sctx, driver.FastAcquireParams{SessionID: s.ID(), ClientID: l.cfg.ClientID,
		Ident: ids[0], Mode: mode, CallID: call, Incarnation: s.Incarnation}, names)
	// On an error, rows may have been stored all the same.
	stored := err != nil || slices.ContainsFunc(rs, func(r driver.Request) bool { return !r.Inline })
	for _, id := range ids {
		s.Rows.Done(id, stored)
	}
	switch {
	case errors.Is(err, driver.ErrServerRestarted):
		return nil, false, s.Lost("%w", err)
	case errors.Is(err, driver.ErrPartialGrant):
		l.undoCall(s, call, ids, false)
		return nil, false, s.Err()
	case err != nil && l.drv.IsRetryable(err):
		return nil, false, nil // the slow path retries name by name
	case err != nil:
		return nil, false, failure(ctx, s, err)
	}
	return rs, ok, nil
}

// acquireOne takes one lock: by the fast path when nobody holds a
// conflicting lock or waits, otherwise by a request decided under the
// identifier's row lock, and then, unless tryOnce, by waiting for its grant.
// Where this client's last attempt on the identifier was refused, it
// goes straight to the request (see contention). A write lock that one
// call takes alone and waits for goes through its turnstile first, where
// the backend has them (turnstileAcquire).
func (l *Service) acquireOne(ctx context.Context, s *Session, call int64, id driver.Ident, mode driver.LockMode, tryOnce, alone bool) (driver.Request, error) {
	// A re-entry (the session holds id in a mode that covers this one)
	// is refused by its own holder on the fast path, passes the
	// contention read and gets nothing from the turnstile: it goes to the
	// request, which grants it at once, and leaves the contention hint
	// alone (a refusal by the session's own holder says nothing of
	// others).
	reentry := s.Own.Covers(id, mode)
	contended := l.contended.has(id)
	if !contended && !reentry {
		r, ok, err := l.fastAcquire(ctx, s, call, id, mode)
		if err != nil || ok {
			return r, err
		}
		l.contended.set(id, true)
	}
	if tryOnce && !reentry && l.conflictHeld(ctx, s, id, mode) {
		return driver.Request{}, errRefused
	}
	began := time.Now()
	if alone && mode == driver.ModeWrite && !reentry {
		r, ok, usable, err := l.turnstileWaits(ctx, s, call, id, tryOnce)
		if err != nil || ok {
			return r, err
		}
		// The turnstile keeps the hint (turnstileAcquire forgets it).
		contended = contended && !usable
	}
	return l.requestAndWait(ctx, s, call, id, mode, tryOnce, reentry, contended, began)
}

// requestAndWait is acquireOne's request decided under the identifier's
// row lock and, unless it is granted at once or refused, the wait for its
// grant. contended is the contention hint acquireOne leaves set, which a
// grant at once clears; began is when acquireOne left the fast path.
func (l *Service) requestAndWait(ctx context.Context, s *Session, call int64, id driver.Ident, mode driver.LockMode, tryOnce, reentry, contended bool, began time.Time) (driver.Request, error) {
	if ctx.Err() != nil {
		// Over (its statements ran to their end): store no request.
		return driver.Request{}, failure(ctx, s, ctx.Err())
	}
	s.Rows.Begin(id) // before the request row exists
	defer s.Rows.Done(id, true)
	looks := l.looks.Load()
	req, err := l.requestSlow(ctx, s, call, id, mode, tryOnce, reentry)
	switch {
	case errors.Is(err, errSessionGone):
		return driver.Request{}, s.Lost("the database no longer has the session (its lease ran out, or a crash emptied the lock state)")
	case errors.Is(err, errRefused):
		return driver.Request{}, err
	case err != nil:
		return driver.Request{}, failure(ctx, s, err)
	case req.Status == driver.StatusGranted:
		if contended {
			l.contended.set(id, false) // free after all: try the fast path next time
		}
		return req, nil
	}
	// A wait behind the turnstile counts towards the deadlock check's
	// delay: a cycle through turnstiles is looked for at once.
	return l.awaitGrant(ctx, s, req, looks, deadlockDelay-time.Since(began))
}

// turnstileAcquire is acquireOne's attempt on a contended write lock
// through its turnstile (driver.Turnstiles):
// it waits up to wait in the server for the holder's release (0: a call
// that tries once takes only a free turnstile), then takes the lock if it
// is free. ok false: the table decides (the
// session may hold the turnstile meanwhile, and keeps it while it waits
// there: the contenders after it wait in the server). A grant made
// without waiting counts towards forgetting the contention hint.
func (l *Service) turnstileAcquire(ctx context.Context, s *Session, call int64, id driver.Ident, wait time.Duration) (r driver.Request, ok, usable bool, err error) {
	// The wait ends a millisecond before the call does; the statement
	// runs to its end (statement).
	if dl, ok := ctx.Deadline(); ok {
		wait = max(min(wait, time.Until(dl)-time.Millisecond), 0)
	}
	l.contentionSteps.Add(1)
	sctx, cancel := l.statement(ctx)
	defer cancel()
	r, ok, waited, usable, err := l.lk.LockTurnstileAcquire(sctx, driver.FastAcquireParams{
		SessionID: s.ID(), ClientID: l.cfg.ClientID, Ident: id, Mode: driver.ModeWrite, CallID: call, Incarnation: s.Incarnation},
		wait)
	switch {
	case !usable && err == nil:
		return driver.Request{}, false, false, nil
	case errors.Is(err, driver.ErrServerRestarted):
		return driver.Request{}, false, true, s.Lost("%w", err)
	case err != nil && ctx.Err() == nil:
		// The line failed (the driver closed it): the table decides, and
		// reports the database's own trouble if it has some.
		return driver.Request{}, false, false, nil
	case err != nil:
		return driver.Request{}, false, true, failure(ctx, s, err)
	case ok:
		l.contended.turnstile(id, !waited)
	}
	return r, ok, true, nil
}

// turnstileWaits is acquireOne's wait behind the identifier's turnstile:
// turnstileWait at first (nothing, for a call
// that tries once); then, while the call may wait on (mayWaitOn: its
// session holds nothing and makes no other call, so no cycle can pass
// through its wait), on in slices of turnstileSlice until it gets the
// lock, its context ends or turnstileOn has passed, listed as waiting by
// monitoring (LockTurnstileWaiting) instead of joining the table, whose
// queue, once formed, keeps later contenders refused and hands on
// through a transaction. turnstileAcquire cuts each wait to end before
// ctx does. ok false: the table decides.
func (l *Service) turnstileWaits(ctx context.Context, s *Session, call int64, id driver.Ident, tryOnce bool) (r driver.Request, ok, usable bool, err error) {
	wait := turnstileWait
	if tryOnce {
		wait = 0
	}
	began := time.Now()
	p := driver.FastAcquireParams{SessionID: s.ID(), ClientID: l.cfg.ClientID, Ident: id, Mode: driver.ModeWrite, CallID: call}
	marked := false
	defer func() {
		switch {
		case !marked:
		case ok && err == nil:
			// Granted: monitoring no longer lists the wait of a call
			// that holds an instance, so its listing goes after the
			// call returns, not on the hand-off's path.
			l.unlistLater(ctx, s, p)
		default:
			// The call's context may have ended (its timeout): on SQLite
			// too the listing goes all the same, before the call returns.
			l.unlist(ctx, p)
		}
	}()
	for {
		r, ok, usable, err = l.turnstileAcquire(ctx, s, call, id, wait)
		if err != nil || ok || !usable || tryOnce || l.turnstileHeld(s, id) || !l.mayWaitOn(ctx, s) ||
			time.Since(began) >= l.turnstileBound() {
			return r, ok, usable, err
		}
		if !marked {
			// Marked before the insert: one that fails (on a dropped
			// connection) may still have been committed, and is deleted
			// with the rest.
			marked = true
			sctx, cancel := l.statement(ctx)
			err := l.lk.LockTurnstileWaiting(sctx, p, true)
			cancel()
			if err != nil {
				return driver.Request{}, false, true, nil // the table decides, and shows the wait
			}
		}
		wait = turnstileSlice
	}
}

// turnstileBound is turnstileOn, or what SetTurnstileOn set.
func (l *Service) turnstileBound() time.Duration {
	if d := l.turnstileOn.Load(); d > 0 {
		return time.Duration(d)
	}
	return turnstileOn
}

// SetTurnstileOn sets the bound of a call's waits behind a turnstile
// (turnstileOn; 0: that default), read at every slice: a test can keep
// a waiter there as long as it checks it, then let it join the table.
func (l *Service) SetTurnstileOn(d time.Duration) { l.turnstileOn.Store(int64(d)) }

// unlist deletes the listing of p's wait behind a turnstile
// (LockTurnstileWaiting), in a context of its own: the call's may have
// ended.
func (l *Service) unlist(ctx context.Context, p driver.FastAcquireParams) {
	mctx, cancel := l.cleanup(ctx)
	defer cancel()
	l.cfg.Log("forget a wait behind a turnstile", l.lk.LockTurnstileWaiting(mctx, p, false))
}

// unlistLater is unlist on a goroutine of its own, for a granted call
// (the lock listings leave out the wait of a call that holds an
// instance): the session's releases wait for it (Session.
// Unlisting), and so does Run's end.
func (l *Service) unlistLater(ctx context.Context, s *Session, p driver.FastAcquireParams) {
	s.Unlisting.RLock()
	l.background.run(func() {
		defer s.Unlisting.RUnlock()
		l.unlist(ctx, p)
	})
}

// mayWaitOn says whether a call whose wait behind a turnstile ran out
// may wait there again rather than in the table: only while its session
// is live, holds nothing and makes no other call (no cycle can pass
// through such a wait, so the deadlock detector need not see it), and
// not within two milliseconds of its deadline.
func (l *Service) mayWaitOn(ctx context.Context, s *Session) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 2*time.Millisecond {
		return false
	}
	return ctx.Err() == nil && s.Err() == nil && s.Held.Load() <= 0 && s.Calls.Load() == 1
}

// dropTurnstile lets the session's turnstile on id go after a failed
// call.
func (l *Service) dropTurnstile(s *Session, id driver.Ident) {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Lease)
	defer cancel()
	l.lk.LockTurnstileDrop(ctx, s.ID(), id)
}

// turnstileHeld reports whether the session holds a turnstile in scope:
// its release is then the backend's
// LockFastRelease, which lets them go.
func (l *Service) turnstileHeld(s *Session, scope driver.Ident) bool {
	return l.lk.LockTurnstileHeld(s.ID(), scope)
}

// SessionEnded forgets an ended session and closes its line for
// turnstiles.
func (l *Service) SessionEnded(id string) {
	l.forget(id)
	l.lk.LockTurnstileEnd(id)
}

// fastAcquire is acquireOne's fast attempt; ok is false when the slow
// path must decide.
func (l *Service) fastAcquire(ctx context.Context, s *Session, call int64, id driver.Ident, mode driver.LockMode) (driver.Request, bool, error) {
	var r driver.Request
	var ok bool
	l.contentionSteps.Add(1)
	s.Rows.Begin(id) // a second reader's grant is a request row
	sctx, cancel := l.statement(ctx)
	defer cancel()
	err := l.retrying(ctx, func() (err error) {
		r, ok, err = l.lk.LockFastAcquire(sctx, driver.FastAcquireParams{
			SessionID: s.ID(), ClientID: l.cfg.ClientID, Ident: id, Mode: mode, CallID: call, Incarnation: s.Incarnation})
		return err
	})
	s.Rows.Done(id, err != nil || ok && !r.Inline)
	switch {
	case errors.Is(err, driver.ErrServerRestarted):
		return driver.Request{}, false, s.Lost("%w", err)
	case err != nil:
		return driver.Request{}, false, failure(ctx, s, err)
	}
	return r, ok, nil
}

// conflictHeld reports whether another session holds id against a
// request in mode (driver.Locks.LockConflictHeld): a try refused whatever
// the queue, with one read that stores nothing, where the turnstile, the
// request and the withdrawal took three to six round trips. An error
// answers false: the slow path decides, and reports the trouble.
func (l *Service) conflictHeld(ctx context.Context, s *Session, id driver.Ident, mode driver.LockMode) bool {
	l.contentionSteps.Add(1)
	sctx, cancel := l.statement(ctx)
	defer cancel()
	held, err := l.lk.LockConflictHeld(sctx, s.ID(), id, mode)
	return err == nil && held
}

// heldAgainst is conflictHeld for a try of several names, before any
// of them is tried: for each name this client last found contended
// (contention), one read, until one is held against the call. Otherwise a
// try refused on its last name took the many-name statement and its
// undo, each earlier name again, the refusal, and the withdrawal of the
// earlier names' grants: nine round trips for two names, against one. A
// name found free of conflicting holders loses its hint, so that a stale
// one costs a single read.
func (l *Service) heldAgainst(ctx context.Context, s *Session, ids []driver.Ident, mode driver.LockMode) bool {
	for _, id := range ids {
		if !l.contended.has(id) {
			continue
		}
		if l.conflictHeld(ctx, s, id, mode) {
			return true
		}
		l.contended.set(id, false)
	}
	return false
}

// requestSlow stores a request decided under the identifier's row lock:
// in one call where the backend can (driver.Locks.LockRequest), otherwise
// (ErrRequestInTx: the call leaves it to the engine) in a transaction of
// the engine's own (request).
func (l *Service) requestSlow(ctx context.Context, s *Session, call int64, id driver.Ident, mode driver.LockMode, tryOnce, covered bool) (driver.Request, error) {
	sctx, cancel := l.statement(ctx)
	defer cancel()
	req, err := l.requestOne(ctx, sctx, driver.RequestParams{SessionID: s.ID(), ClientID: l.cfg.ClientID, Ident: id, Mode: mode,
		CallID: call, TryOnce: tryOnce, Covered: covered})
	if !errors.Is(err, driver.ErrRequestInTx) {
		return req, err
	}
	err = l.inTxUntil(ctx, sctx, func(tx driver.Tx) error {
		// Anew on each try: a retried transaction starts from scratch.
		req = driver.Request{SessionID: s.ID(), ClientID: l.cfg.ClientID, Ident: id, Mode: mode,
			Status: driver.StatusPending, CallID: call, ID: math.MaxInt64}
		return l.request(sctx, tx, &req, tryOnce)
	})
	return req, err
}

// requestOne is requestSlow through the backend's one call, run in sctx
// (statement) and tried again only while ctx lasts.
func (l *Service) requestOne(ctx, sctx context.Context, p driver.RequestParams) (driver.Request, error) {
	var req driver.Request
	err := l.retrying(ctx, func() (err error) {
		req, err = l.lk.LockRequest(sctx, p)
		return err
	})
	switch {
	case errors.Is(err, driver.ErrNoSession):
		return req, errSessionGone
	case errors.Is(err, driver.ErrWouldWait):
		return req, errRefused
	}
	return req, err
}

// request is the slow path: under the identifier's row lock, grant req
// (status and token set) or queue it, and store it with the identifier's
// counts. With tryOnce a request that would wait is errRefused instead.
func (l *Service) request(ctx context.Context, tx driver.Tx, req *driver.Request, tryOnce bool) error {
	st, err := tx.LockIdentLock(ctx, []driver.Ident{req.Ident})
	if err != nil {
		return err
	}
	if err := l.sessionInDatabase(ctx, tx, req.SessionID); err != nil {
		return err
	}
	rows, err := tx.LockRequestList(ctx, []driver.Ident{req.Ident})
	if err != nil {
		return err
	}
	gate, err := l.gateRows(ctx, tx, st[0])
	if err != nil {
		return err
	}
	grants := lockcore.Grants(slices.Concat(gate, rows, []driver.Request{*req}))
	state := st[0]
	if len(grants) > 0 && grants[len(grants)-1] == req.ID {
		req.Status = driver.StatusGranted
		state.Fence++
		req.Token = state.Fence
	} else if tryOnce {
		return errRefused // rolled back: nothing stored
	}
	if req.ID, err = tx.LockRequestInsert(ctx, *req); err != nil {
		return err
	}
	rows = append(rows, *req)
	state.Readers, state.Writers, state.Waiting = lockcore.Counts(rows)
	return tx.LockIdentUpdate(ctx, state)
}

// sessionInDatabase: only a session the database still has may queue or
// be granted: one whose row a crash emptied (PostgreSQL's UNLOGGED lock
// state) would hold a request nobody renews, swept as an orphan while its
// owner still counts itself the holder.
func (l *Service) sessionInDatabase(ctx context.Context, tx driver.Tx, id string) error {
	live, err := tx.SessionListByClient(ctx, l.cfg.ClientID)
	if err != nil {
		return err
	}
	if !slices.Contains(live, id) {
		return errSessionGone
	}
	return nil
}

// BeforeRegister, when set (by tests), runs in a waiting call between the
// commit of its request and its waiter's registration, with the session's
// id: the window a grant can fall into before anyone waits for it.
var BeforeRegister atomic.Pointer[func(sessionID string)]

// awaitGrant waits for a queued request's grant, its choice as a deadlock
// victim, the session's end or ctx. looks is the count of status-check
// wake-ups read before the request began; detectIn is when to look for a
// cycle.
func (l *Service) awaitGrant(ctx context.Context, s *Session, req driver.Request, looks int64, detectIn time.Duration) (driver.Request, error) {
	// The waiter is registered only now that the request is committed (a
	// status check on another connection must find it). A grant that came
	// in between found no waiter and asked for a look (wake.Locks.Grant):
	// a check now catches it, run only when such a wake-up came since the
	// request began (a listener's start is one).
	check := false
	if err := l.cfg.Listening(ctx); err != nil {
		if errors.Is(err, errs.ErrClosed) || ctx.Err() != nil {
			return driver.Request{}, failure(ctx, s, err)
		}
		// The listener could not start (the database may be away): wait
		// all the same, until the timeout or the session's end; the
		// heartbeat starts the listener again and its start wakes every
		// waiter.
		l.cfg.Logf("lock waiter: %v; waiting on", err)
		check = true
	}
	if f := BeforeRegister.Load(); f != nil {
		(*f)(s.ID())
	}
	answer := l.cfg.Waits.Add(req.ID, s.ID(), req.CallID)
	if check || l.looks.Load() != looks {
		l.check()
	}
	// This request may have closed a cycle: look once the call has
	// waited deadlockDelay (detectIn from now). Most waits end sooner and
	// cost no graph walk.
	detect := time.AfterFunc(max(detectIn, 0), func() { l.detectIfWaiting(req.ID) })
	defer detect.Stop()
	defer l.watchGate(req.Ident)()
	select {
	case r := <-answer:
		return answered(s, r, req)
	case <-s.Done():
		// Ended, perhaps before the waiter was registered for its
		// Waits.EndSession answer.
		l.cfg.Waits.Remove(req.ID)
		return answered(s, driver.Request{ID: req.ID}, req)
	case <-ctx.Done():
		l.cfg.Waits.Remove(req.ID)
		return driver.Request{}, failure(ctx, s, ctx.Err())
	}
}

// answered turns the answer to a waiting request into Lock's result.
func answered(s *Session, r, req driver.Request) (driver.Request, error) {
	switch r.Status {
	case driver.StatusGranted:
		r.Ident, r.Mode, r.SessionID = req.Ident, req.Mode, s.ID() // a hint carries only id and token
		return r, nil
	case driver.StatusDeadlock:
		return driver.Request{}, fmt.Errorf("%w: %s lock on %s was chosen as the victim", errs.ErrDeadlock, modeWord(req.Mode), describe(req.Ident))
	}
	if err := s.Check(); err != nil {
		return driver.Request{}, err
	}
	// Reaped, or emptied by a crash: the session is gone too.
	return driver.Request{}, s.Lost("lock request vanished (session ended)")
}

// failure maps an error during acquisition to what the caller sees.
func failure(ctx context.Context, s *Session, err error) error {
	txn.SettleDeadline(ctx)
	if errors.Is(err, errs.ErrTimeout) || errors.Is(context.Cause(ctx), errs.ErrTimeout) {
		return fmt.Errorf("%w", errs.ErrTimeout)
	}
	if serr := s.Check(); serr != nil {
		return serr
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("baton: lock: %w", err)
}

// inDoubt reports whether a failed call's error may have left a statement
// of the call running in the server (a connection cut while the statement
// waited there, say): a failure of the network or the database, not one
// of the lock service's own answers.
func inDoubt(err error) bool {
	for _, answer := range []error{errs.ErrTimeout, errs.ErrDeadlock, errs.ErrSessionLost, errs.ErrClosed,
		errs.ErrInvalid, errs.ErrWrongName, context.Canceled} {
		if errors.Is(err, answer) {
			return false
		}
	}
	return true
}

// withdrawCall withdraws the requests of a call in the backend's one
// call where it has one (driver.Locks.LockCallWithdraw, told
// whether a statement of the call may still run: settle): false leaves
// the withdrawal to undoCall's transaction (the backend has no such
// call, it left the withdrawal to the engine, or the call failed before
// its commit).
func (l *Service) withdrawCall(ctx context.Context, s *Session, call int64, ids []driver.Ident, settle bool) bool {
	return l.inOneCall(ctx, "withdraw a lock call in one call", func(sctx context.Context) (bool, error) {
		return l.lk.LockCallWithdraw(sctx, s.ID(), call, ids, settle)
	})
}

// undoCall removes every request of a failed call, granted or waiting,
// and grants what that frees. When that cannot be done (the database is
// away), the session is given up: a request left behind could later be
// granted to an owner who no longer waits, so the client deletes the
// whole session as soon as the database answers.
//
// ids are the call's identifiers (sorted, one kind and namespace). settle
// is set when a statement of the call may still run in the server
// (inDoubt; the server keeps running a statement whose client is gone,
// and so does a pooler's connection to it: TestLockCallConnectionCut).
// The identifiers' rows are then locked first, in the order every call
// locks them: such a statement holds or waits for one of them, so the
// withdrawal waits for it and then sees what it wrote.
func (l *Service) undoCall(s *Session, call int64, ids []driver.Ident, settle bool) {
	if s.Err() != nil {
		return // ended: the client deletes everything it had
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Lease)
	defer cancel()
	// A backend that withdraws a call in one call of its own finds its
	// requests itself, after its rows' locks where settle asks for them
	// (withdrawCall).
	if l.withdrawCall(ctx, s, call, ids, settle) {
		return
	}
	if !settle {
		// No statement of the call can still be running, so a read that
		// finds none of its requests is the last word: a call refused at
		// once (a lock tried once) or cut off before it stored anything
		// needs no write transaction, which cost a refused try two to
		// three round trips more, and on SQLite waited for the file's
		// write lock (another process's writes held back a withdrawal
		// whose call had written nothing).
		if rs, err := l.drv.NoTx().LockRequestListCall(ctx, s.ID(), call, ids); err == nil && len(rs) == 0 {
			return
		}
	}
	err := l.inTx(ctx, func(tx driver.Tx) error {
		if settle {
			if _, err := tx.LockIdentLock(ctx, ids); err != nil {
				return err
			}
		}
		rs, err := tx.LockRequestListCall(ctx, s.ID(), call, ids)
		if err != nil {
			return err
		}
		return l.RemoveRequests(ctx, tx, rs)
	})
	if err != nil {
		s.Lose(fmt.Errorf("%w: a failed lock call could not be withdrawn: %v", errs.ErrSessionLost, err))
	}
}
