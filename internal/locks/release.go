package locks

import (
	"context"
	"fmt"
	"sort"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/lockcore"
)

// Release releases the session's instances p names and hands what that
// frees to waiters; it returns how many instances it released.
func (l *Service) Release(ctx context.Context, s *Session, p driver.FastReleaseParams) (n int, err error) {
	p.SessionID = s.ID()
	p.Contended = func(id driver.Ident) { l.contended.set(id, true) }
	// A granted wait's listing still being deleted goes first: once the
	// instance is released nothing would hide it from monitoring.
	s.Unlisting.Lock()
	//lint:ignore SA2001 an empty critical section: the wait for the readers is the point
	s.Unlisting.Unlock()

	defer func() {
		if err == nil && s.Held.Add(-int64(n)) < 0 {
			s.Held.Store(0)
		}
	}()
	rows, sole, one, gen := s.Rows.Covered(released(p))
	p.InlineOnly = !rows
	if one && p.Limit == 0 {
		p.RowsOn = sole.Name
	}
	if p.Limit == 0 {
		// Before and after: a grant recorded while the release runs may
		// be of an instance it released.
		s.Own.Forget(released(p))
		defer s.Own.Forget(released(p))
		// Every instance there released: no rows left there either.
		defer func() {
			if err == nil {
				s.Rows.Clear(released(p), gen)
			}
		}()
	} else {
		// The newest instances released: where only the inline holder
		// the session was granted first is left, so are no rows (the
		// next release of the name is one statement), unless an
		// acquisition began or ended meanwhile (Clear's gen) or the
		// backend may have moved the holder into a row
		// (driver.Locks.AdoptsHolders).
		defer func() {
			if err != nil {
				s.Own.Forget(released(p))
			} else if s.Own.Released(released(p), n) && !l.adopts {
				s.Rows.Clear(released(p), gen)
			}
		}()
	}
	// A release cut off could commit after the call reports it failed.
	sctx, cancel := l.statement(ctx)
	defer cancel()
	if l.releasesInTx && l.contended.has(released(p)) {
		if n, done, err := l.releaseContendedInTx(ctx, sctx, s, p); done {
			return n, err
		}
	}
	var waiting []driver.Ident
	err = l.retrying(ctx, func() (err error) {
		n, waiting, err = l.lk.LockFastRelease(sctx, p)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("baton: release: %w", err)
	}
	if err := l.handOnReleased(sctx, p, waiting); err != nil {
		return n, err
	}
	return n, nil
}

// releaseContendedInTx is Release of contended names on a backend that
// releases in the engine's transaction (driver.Locks.ReleasesInTx): the
// release handing on in one transaction (releaseHandingOn) unless the
// session holds the names' turnstile on a server (done false: the
// release goes apart from the hand-on).
func (l *Service) releaseContendedInTx(ctx, sctx context.Context, s *Session, p driver.FastReleaseParams) (n int, done bool, err error) {
	switch {
	case !l.turnstileHeld(s, released(p)):
		n, err = l.releaseHandingOn(ctx, sctx, p)
		return n, true, err
	case !l.detach:
		// An embedded database's turnstiles are in the process: let
		// go after the commit at no cost, rather than release apart
		// from the hand-on (LockFastRelease, then a transaction).
		defer l.dropTurnstile(s, released(p))
		n, err = l.releaseHandingOn(ctx, sctx, p)
		return n, true, err
	}
	return 0, false, nil
}

// handOnReleased marks the identifiers LockFastRelease reports to
// re-examine (waiting) contended and, when there are some, hands them on
// in sctx, whatever the call's context does: the instances are released.
func (l *Service) handOnReleased(sctx context.Context, p driver.FastReleaseParams, waiting []driver.Ident) error {
	for _, id := range waiting {
		l.contended.set(id, true)
	}
	if len(waiting) > 0 {
		l.handedOn()
		l.contended.set(released(p), true)
		if err := l.regrantNow(sctx, waiting); err != nil {
			return fmt.Errorf("baton: release: %w", err)
		}
	}
	return nil
}

// releaseHandingOn is Release where the last release of these names found
// waiters, on a backend that releases in the engine's transaction
// (driver.Locks.ReleasesInTx): the release and the grants it
// allows in one transaction, one commit, whose statements run in sctx
// (statement).
func (l *Service) releaseHandingOn(ctx, sctx context.Context, p driver.FastReleaseParams) (int, error) {
	var n int
	var waiting []driver.Ident
	err := l.inTxUntil(ctx, sctx, func(tx driver.Tx) (err error) {
		if n, waiting, err = l.lk.LockReleaseTx(sctx, tx, p); err != nil || len(waiting) == 0 {
			return err
		}
		states, err := tx.LockIdentLock(sctx, waiting)
		if err != nil {
			return err
		}
		return l.regrantLocked(sctx, tx, states)
	})
	if err != nil {
		return 0, fmt.Errorf("baton: release: %w", err)
	}
	l.contended.set(released(p), len(waiting) > 0)
	if len(waiting) > 0 {
		l.handedOn()
	}
	return n, nil
}

// handedOn tells the client that a release handed a lock on.
func (l *Service) handedOn() {
	if l.cfg.HandedOn != nil {
		l.cfg.HandedOn()
	}
}

// RemoveRequests deletes requests (of an ended session, an undone call,
// orphans) and grants what that frees.
func (l *Service) RemoveRequests(ctx context.Context, tx driver.Tx, rs []driver.Request) error {
	if len(rs) == 0 {
		return nil
	}
	states, err := tx.LockIdentLock(ctx, uniqueIdents(rs))
	if err != nil {
		return err
	}
	ids := make([]int64, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	if err := tx.LockRequestDelete(ctx, ids); err != nil {
		return err
	}
	return l.regrantLocked(ctx, tx, states)
}

// removeInCall withdraws rs in the backend's one call where it has one
// (driver.Locks.RemovesInOneCall): done false leaves them to the caller's
// transaction (the backend has no such call, it left the withdrawal to
// the engine, or the call failed before its commit), which reads them
// again.
func (l *Service) removeInCall(ctx context.Context, rs []driver.Request) bool {
	return l.inOneCall(ctx, "withdraw lock requests in one call", func(sctx context.Context) (bool, error) {
		if len(rs) == 0 {
			return true, nil
		}
		return l.lk.LockRequestsRemove(sctx, rs)
	})
}

// inOneCall runs call (a withdrawal in the backend's one call, which
// commits in the server and so runs to its end: statement) where the
// backend has one, tried again while ctx lasts; an error is logged (what
// names it). done false: the backend has no such call, it left the
// withdrawal to the engine, or the call failed before its commit.
func (l *Service) inOneCall(ctx context.Context, what string, call func(sctx context.Context) (bool, error)) (done bool) {
	if !l.removes {
		return false
	}
	sctx, cancel := l.statement(ctx)
	defer cancel()
	err := l.retrying(ctx, func() (err error) {
		done, err = call(sctx)
		return err
	})
	if err != nil {
		l.cfg.Log(what, err)
	}
	return done
}

// WithdrawSession withdraws an ending session's requests in the
// backend's one call, where it has one (removeInCall), before the
// caller's transaction deletes the session, which still removes whatever
// is left (a request stored meanwhile). It reads them first (on MariaDB
// a read of the lock_holds view costs about a fifth of a millisecond),
// so its caller asks only for a session that may have rows
// (Rows.Any).
func (l *Service) WithdrawSession(ctx context.Context, id string) {
	if !l.removes {
		return
	}
	if rs, err := l.drv.NoTx().LockRequestListBySession(ctx, id, -1, ""); err == nil {
		l.removeInCall(ctx, rs)
	}
}

func uniqueIdents(rs []driver.Request) []driver.Ident {
	seen := map[driver.Ident]bool{}
	var out []driver.Ident
	for _, r := range rs {
		if !seen[r.Ident] {
			seen[r.Ident] = true
			out = append(out, r.Ident)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// SweepOrphans removes requests whose session no longer exists, whatever
// process they came from, and grants what that frees.
func (l *Service) SweepOrphans(ctx context.Context) error {
	// Look first without a transaction: there is nearly always nothing.
	if rs, err := l.drv.NoTx().LockRequestListOrphans(ctx, 100); err != nil || len(rs) == 0 || l.removeInCall(ctx, rs) {
		return err
	}
	return l.inTx(ctx, func(tx driver.Tx) error {
		rs, err := tx.LockRequestListOrphans(ctx, 100)
		if err != nil || len(rs) == 0 {
			return err
		}
		return l.RemoveRequests(ctx, tx, rs)
	})
}

// regrantNow re-examines identifiers after a release, through the backend's
// shortcut when it has one.
func (l *Service) regrantNow(ctx context.Context, idents []driver.Ident) error {
	handled := true
	err := l.retrying(ctx, func() (err error) {
		if handled, err = l.lk.LockRegrant(ctx, idents); !handled {
			return nil
		}
		return err
	})
	if !handled {
		return l.inTx(ctx, func(tx driver.Tx) error {
			states, err := tx.LockIdentLock(ctx, idents)
			if err != nil {
				return err
			}
			return l.regrantLocked(ctx, tx, states)
		})
	}
	return err
}

// regrantLocked grants every waiting request of the identifiers (locked in
// tx) that can now be granted, and hands the grants to their clients.
func (l *Service) regrantLocked(ctx context.Context, tx driver.Tx, states []driver.IdentState) error {
	var wake []driver.Request
	for _, st := range states {
		granted, err := l.regrantIdent(ctx, tx, st)
		if err != nil {
			return err
		}
		wake = append(wake, granted...)
	}
	return tx.WakeClients(ctx, wake)
}

// regrantIdent grants what lockcore.Grants allows on one identifier, stores
// its new counts and fence, and returns the grants (client, session, call,
// id, token).
func (l *Service) regrantIdent(ctx context.Context, tx driver.Tx, st driver.IdentState) (grants []driver.Request, err error) {
	rows, err := tx.LockRequestList(ctx, []driver.Ident{st.Ident})
	if err != nil {
		return nil, err
	}
	gate, err := l.gateRows(ctx, tx, st)
	if err != nil {
		return nil, err
	}
	grants, err = lockcore.Regrant(&st, gate, rows, func(id, token int64) (bool, error) {
		return tx.LockRequestSetStatus(ctx, id, driver.StatusPending, driver.StatusGranted, token)
	})
	if err != nil {
		return nil, err
	}
	return grants, tx.LockIdentUpdate(ctx, st)
}

// detectIfWaiting runs deadlock detection if the request still waits:
// one run at a time in this client, and one more after it when any
// request asked meanwhile (that run may have read the graph before the
// request was stored), so a burst of waits that outlast the delay costs
// two graph walks, not one each (each takes the detector's lock and reads
// every waiting request: under a burst they had slowed the hand-offs
// they waited for).
func (l *Service) detectIfWaiting(id int64) {
	if l.cfg.Closed() || !l.cfg.Waits.Waits(id) || l.ownSearchOff.Load() {
		return
	}
	l.mu.Lock()
	if l.detecting {
		l.detectAgain = true
		l.mu.Unlock()
		return
	}
	l.detecting = true
	l.mu.Unlock()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Lease)
		l.cfg.Log("deadlock detection", l.DetectDeadlocks(ctx))
		cancel()
		l.mu.Lock()
		again := l.detectAgain && !l.cfg.Closed()
		l.detecting, l.detectAgain = again, false
		l.mu.Unlock()
		if !again {
			return
		}
	}
}

// DetectDeadlocks looks for cycles among all waiting requests and aborts
// one request per cycle (see lockcore.Victims).
func (l *Service) DetectDeadlocks(ctx context.Context) error {
	l.detections.Add(1)
	return l.inTx(ctx, func(tx driver.Tx) error {
		if err := tx.LockDetectorLock(ctx); err != nil {
			return err
		}
		graph, err := tx.LockWaitGraph(ctx)
		if err != nil {
			return err
		}
		var wake []driver.Request
		for _, v := range lockcore.Victims(graph) {
			ok, err := tx.LockRequestSetStatus(ctx, v.ID, driver.StatusPending, driver.StatusDeadlock, v.Token)
			if err != nil {
				return err
			}
			if ok {
				wake = append(wake, driver.Request{ClientID: v.ClientID}) // to look: not a grant
			}
		}
		return tx.WakeClients(ctx, wake)
	})
}
