package locks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/lockcore"
	"github.com/batonhq/baton/internal/txn"
)

// LockTx takes the identifiers (sorted, no name twice) in the caller's
// transaction ct, all or none (see baton.Client.LockTx): a transaction's
// locks end with it.
func (l *Service) LockTx(ctx context.Context, ct driver.CallerTx, ids []driver.Ident, mode driver.LockMode, timeout time.Duration) error {
	tl := l.lk
	tryOnce := timeout == 0
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errs.ErrTimeout)
		defer cancel()
	}
	// Several names: a savepoint gives back the earlier names' gates when
	// a later one fails, where the database can (PostgreSQL's advisory
	// locks; not InnoDB's row locks, which a rollback to a savepoint
	// keeps, nor SQLite's write lock). One name gives back by itself.
	many := len(ids) > 1
	if many {
		if err := ct.Exec(onCaller(ctx), "SAVEPOINT baton_locktx"); err != nil {
			return fmt.Errorf("baton: lock in transaction: %w", err)
		}
	}
	for _, id := range ids {
		if err := l.lockTxOne(ctx, tl, ct, id, mode, tryOnce); err != nil {
			if bg := onCaller(ctx); many && ct.Exec(bg, "ROLLBACK TO SAVEPOINT baton_locktx") == nil {
				_ = ct.Exec(bg, "RELEASE SAVEPOINT baton_locktx")
			}
			return txLockFailure(ctx, err)
		}
	}
	if many {
		return ct.Exec(onCaller(ctx), "RELEASE SAVEPOINT baton_locktx")
	}
	return nil
}

// txQueueAfter is how long a transaction waits for sessions before it
// takes its gate regardless and waits holding it: new grants to sessions
// then wait behind it, so that a stream of sessions cannot starve it.
const txQueueAfter = 100 * time.Millisecond

// errImpatient: awaitTxFree's patience ran out.
var errImpatient = errors.New("baton: waited long enough")

// lockTxOne takes one identifier's lock in the caller's transaction: its
// gate, then the check that the identifier is gated and that no session
// holds or waits for it in a conflicting mode, made after the gate was
// taken (by TxGate itself where it can). While a session conflicts it
// waits and tries again, for txQueueAfter; then it queues (gateQueued).
func (l *Service) lockTxOne(ctx context.Context, tl driver.TxLocker, ct driver.CallerTx, id driver.Ident, mode driver.LockMode, tryOnce bool) error {
	patience := time.Now().Add(txQueueAfter)
	for {
		queue := !tryOnce && !tl.TxGateSerial() && !time.Now().Before(patience)
		err := l.beforeGate(ctx, tl, id, mode, tryOnce, queue, patience)
		switch {
		case errors.Is(err, errImpatient):
			continue
		case err != nil:
			return err
		case queue:
			return l.gateQueued(ctx, tl, ct, id, mode)
		}
		if done, err := l.gateChecked(ctx, tl, ct, id, mode, tryOnce, patience); done || err != nil {
			return err
		}
	}
}

// beforeGate readies the identifier where TxGate does not check the
// sessions (a missing gate row cannot be locked) and, unless queueing,
// waits for the sessions first (errImpatient once patience has passed).
func (l *Service) beforeGate(ctx context.Context, tl driver.TxLocker, id driver.Ident, mode driver.LockMode, tryOnce, queue bool, patience time.Time) error {
	if tl.TxGateChecks() {
		return nil
	}
	if err := tl.TxPrepare(ctx, id); err != nil || queue {
		return err
	}
	return l.awaitTxFree(ctx, id, mode, true, tryOnce, patience)
}

// gateChecked takes the gate, checked by TxGate where it can and by
// markAndCheck otherwise. done false: try again (the identifier was not
// gated yet, or a session's lock conflicted, the gate was given back and
// the sessions waited for until patience ran out).
func (l *Service) gateChecked(ctx context.Context, tl driver.TxLocker, ct driver.CallerTx, id driver.Ident, mode driver.LockMode, tryOnce bool, patience time.Time) (done bool, err error) {
	wait, gctx := gateWait(ctx, tryOnce)
	checked, err := tl.TxGate(gctx, ct, id, mode, wait, true)
	switch {
	case errors.Is(err, driver.ErrGateUngated):
		return false, tl.TxPrepare(ctx, id)
	case errors.Is(err, driver.ErrGateSession) && !tryOnce && !tl.TxGateSerial():
		if err := l.awaitTxFree(ctx, id, mode, true, false, patience); err != nil && !errors.Is(err, errImpatient) {
			return false, err
		}
		return false, nil
	case err != nil:
		return false, gateFailure(err, id, mode, tryOnce)
	}
	if !checked {
		if err := l.markAndCheck(ctx, tl, id, mode, tryOnce); err != nil {
			return false, err
		}
	}
	return true, l.holdRecorded(ctx, tl, ct, id, mode)
}

// gateQueued takes the gate without checking the sessions, then waits,
// holding it, until no session holds the identifier in a conflicting
// mode; a savepoint gives the gate back on failure where the database can
// (PostgreSQL).
func (l *Service) gateQueued(ctx context.Context, tl driver.TxLocker, ct driver.CallerTx, id driver.Ident, mode driver.LockMode) error {
	if err := ct.Exec(onCaller(ctx), "SAVEPOINT baton_locktx_queued"); err != nil {
		return fmt.Errorf("baton: lock in transaction: %w", err)
	}
	err := func() error {
		wait, gctx := gateWait(ctx, false)
		if _, err := tl.TxGate(gctx, ct, id, mode, wait, false); err != nil {
			return gateFailure(err, id, mode, false)
		}
		return l.markAndCheck(ctx, tl, id, mode, false)
	}()
	if err != nil {
		if bg := onCaller(ctx); ct.Exec(bg, "ROLLBACK TO SAVEPOINT baton_locktx_queued") == nil {
			_ = ct.Exec(bg, "RELEASE SAVEPOINT baton_locktx_queued")
		}
		return err
	}
	if err := ct.Exec(onCaller(ctx), "RELEASE SAVEPOINT baton_locktx_queued"); err != nil {
		return fmt.Errorf("baton: lock in transaction: %w", err)
	}
	return l.holdRecorded(ctx, tl, ct, id, mode)
}

// markAndCheck follows a gate taken unchecked: the identifier marked
// gated, then, from a read after the mark, a wait until no session holds
// it in a conflicting mode (no session can be granted it meanwhile).
func (l *Service) markAndCheck(ctx context.Context, tl driver.TxLocker, id driver.Ident, mode driver.LockMode, tryOnce bool) error {
	if err := tl.TxPrepare(ctx, id); err != nil {
		return err
	}
	return l.awaitTxFree(ctx, id, mode, false, tryOnce, time.Time{})
}

func (l *Service) holdRecorded(ctx context.Context, tl driver.TxLocker, ct driver.CallerTx, id driver.Ident, mode driver.LockMode) error {
	return tl.TxHoldCaller(onCaller(ctx), ct, driver.TxHold{Ident: id, Mode: mode, Host: l.cfg.Host, PID: l.cfg.PID, Owner: l.cfg.Owner})
}

// gateWait is how long TxGate may wait, and the context it runs under:
// the database bounds a wait up to ctx's deadline, as a cancelled
// statement could break the caller's connection, and with it the
// transaction (onCaller). Only a wait without a deadline keeps ctx: its
// cancellation is its only end.
func gateWait(ctx context.Context, tryOnce bool) (time.Duration, context.Context) {
	if tryOnce {
		return 0, onCaller(ctx)
	}
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), time.Millisecond), onCaller(ctx)
	}
	return -1, ctx
}

// onCaller is the context of a statement on the caller's transaction that
// does not wait: ctx without its end. A statement cut off by ctx breaks
// the caller's connection, and with it the transaction (database/sql
// discards it), so the call's deadline is kept between statements
// instead, and by the database in the gate's wait (gateWait).
func onCaller(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// gateFailure maps TxGate's failure to LockTx's.
func gateFailure(err error, id driver.Ident, mode driver.LockMode, tryOnce bool) error {
	switch {
	case errors.Is(err, driver.ErrGateBusy), errors.Is(err, driver.ErrGateSession) && tryOnce:
		return errs.ErrTimeout
	case errors.Is(err, driver.ErrGateSession):
		// No session can release while the transaction holds the
		// database's write lock, so there is no waiting for one.
		return fmt.Errorf("%w: %s lock on %s in a transaction: a session holds it, and cannot release it while the transaction holds SQLite's write lock", errs.ErrDeadlock, modeWord(mode), describe(id))
	case errors.Is(err, driver.ErrGateDeadlock):
		return fmt.Errorf("%w: %s lock on %s in a transaction: the database found transactions waiting for each other", errs.ErrDeadlock, modeWord(mode), describe(id))
	}
	return err
}

// txConflicts reports whether a session's granted instance (or, with
// pending, its waiting request) conflicts with a transaction's lock in
// mode.
func txConflicts(rows []driver.Request, mode driver.LockMode, pending bool) bool {
	for _, r := range rows {
		if (r.Status == driver.StatusGranted || (pending && r.Status == driver.StatusPending)) && lockcore.Conflicts(r.Mode, mode) {
			return true
		}
	}
	return false
}

// txPoll is how often a transaction waiting for sessions, or a session
// waiting on a gated identifier, looks again: nothing announces the end of
// another program's transaction.
const txPoll = 50 * time.Millisecond

// awaitTxFree waits until no session holds (or, with pending, waits for)
// the identifier in a mode conflicting with mode; errImpatient once
// patience (when set) has passed.
func (l *Service) awaitTxFree(ctx context.Context, id driver.Ident, mode driver.LockMode, pending, tryOnce bool, patience time.Time) error {
	pause := time.Millisecond
	for {
		rows, err := l.drv.NoTx().LockRequestList(ctx, []driver.Ident{id})
		if err != nil {
			return err
		}
		if !txConflicts(rows, mode, pending) {
			return nil
		}
		if tryOnce {
			return errs.ErrTimeout
		}
		if !patience.IsZero() && !time.Now().Before(patience) {
			return errImpatient
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, txPoll)
	}
}

// txLockFailure maps a failure of LockTx to what the caller sees.
func txLockFailure(ctx context.Context, err error) error {
	txn.SettleDeadline(ctx)
	switch {
	case errors.Is(err, errs.ErrTimeout) || errors.Is(context.Cause(ctx), errs.ErrTimeout):
		return fmt.Errorf("%w", errs.ErrTimeout)
	case errors.Is(err, errs.ErrDeadlock):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("baton: lock in transaction: %w", err)
}

// gateRows returns, for a gated identifier whose row lock tx holds, a
// granted instance standing for the transactions that hold its gate
// (nobody's session; none when no transaction does), to be ranked with
// the identifier's requests by lockcore.Grants.
func (l *Service) gateRows(ctx context.Context, tx driver.Tx, st driver.IdentState) ([]driver.Request, error) {
	if !st.Gated {
		return nil, nil
	}
	mode, err := l.lk.TxGateHeld(ctx, tx, st.Ident)
	if err != nil || mode == "" {
		return nil, err
	}
	return []driver.Request{{Ident: st.Ident, Mode: mode, Status: driver.StatusGranted}}, nil
}

// gateWatch is the client's poll of transactions' gates for its waiting
// requests: a transaction's end, which may let a session's request in,
// wakes nobody, so the gated names among those waited on are handed on
// (regrantNow) every txPoll until their waits end. Which names are gated
// comes with the statuses' poll, once per poll interval
// (driver.Locks.LockRequestStatusesGated: gatesSeen), and from a look of
// the loop's own at the names, all in one statement (TxGatedAmong),
// txPoll after a name is first waited on (most waits are over by then).
// It costs
// nothing while nothing waits, and is per client, not per waiting
// request (DESIGN, Notifications).
type gateWatch struct {
	mu      sync.Mutex
	waits   map[driver.Ident]int // waiting requests, by name
	fresh   bool                 // a name not looked at yet, waited on since freshAt
	freshAt time.Time
	gated   []driver.Ident // the names last found gated
	running bool           // the loop runs
	kick    chan struct{}  // the names changed, or gated did
}

// gatesSeen takes the gated names the statuses' poll found.
func (l *Service) gatesSeen(gated []driver.Ident) {
	g := &l.gates
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.gated) == 0 && len(gated) == 0 {
		return
	}
	g.gated = gated
	g.kickLocked()
}

// watchGate registers a request waiting on id with the client's poll of
// gates, until the returned stop is called.
func (l *Service) watchGate(id driver.Ident) (stop func()) {
	if l.lk.TxGateSerial() {
		return func() {}
	}
	g := &l.gates
	g.mu.Lock()
	if g.waits == nil {
		g.waits, g.kick = map[driver.Ident]int{}, make(chan struct{}, 1)
	}
	if g.waits[id]++; g.waits[id] == 1 {
		if !g.fresh {
			g.fresh, g.freshAt = true, time.Now()
		}
		g.kickLocked()
	}
	if !g.running {
		g.running = true
		go l.gateLoop()
	}
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		if g.waits[id]--; g.waits[id] <= 0 {
			delete(g.waits, id)
			g.kickLocked()
		}
		g.mu.Unlock()
	}
}

// kickLocked wakes the loop (g.mu held).
func (g *gateWatch) kickLocked() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// gateRound runs gateLoop's statements of one round: when look, the
// look for which of the names wait behind a transaction's gate (gated,
// kept for the next rounds); then, at most once per txPoll (handed: the
// last time), the hand-on of the gated ones. It returns the gated names.
func (l *Service) gateRound(names, gated []driver.Ident, look bool, handed *time.Time) ([]driver.Ident, error) {
	g := &l.gates
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Lease)
	var err error
	if look {
		l.gateLooks.Add(1)
		if gated, err = l.lk.TxGatedAmong(ctx, names); err == nil {
			g.mu.Lock()
			g.gated = gated
			g.mu.Unlock()
		}
	}
	if err == nil && len(gated) > 0 && time.Since(*handed) >= txPoll {
		*handed = time.Now()
		err = l.regrantNow(ctx, gated)
	}
	cancel()
	return gated, err
}

// gateLoop is gateWatch's loop, until no request waits or the client
// closes.
func (l *Service) gateLoop() {
	g := &l.gates
	var handed time.Time // the last regrantNow
	var failing errs.Streak
	for {
		g.mu.Lock()
		if len(g.waits) == 0 || l.cfg.Closed() {
			g.running, g.gated = false, nil
			g.mu.Unlock()
			return
		}
		names := make([]driver.Ident, 0, len(g.waits))
		for id := range g.waits {
			names = append(names, id)
		}
		now := time.Now()
		look := g.fresh && now.Sub(g.freshAt) >= txPoll
		if look {
			g.fresh = false
		}
		// Without a look or a hand-on due, the loop wakes once per poll
		// interval (no statement) to see that the client still runs.
		wait := l.cfg.PollInterval
		if g.fresh {
			wait = txPoll - now.Sub(g.freshAt)
		}
		g.gated = slices.DeleteFunc(g.gated, func(id driver.Ident) bool { return g.waits[id] == 0 })
		gated := slices.Clone(g.gated)
		g.mu.Unlock()

		gated, err := l.gateRound(names, gated, look, &handed)
		if failing.First(err) {
			l.cfg.Log("check transactions' gates of waiting lock requests (said once until it works again)", err)
		}

		if len(gated) > 0 {
			wait = min(wait, txPoll-time.Since(handed))
		}
		t := time.NewTimer(max(wait, 0))
		select {
		case <-t.C:
		case <-g.kick:
		}
		t.Stop()
	}
}
