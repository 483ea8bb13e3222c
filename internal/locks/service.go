// Package locks is baton's lock service: taking and releasing session
// locks (the one-statement fast path, the request decided under the
// identifier's row lock, the wait for a grant), handing freed locks to
// waiters, deadlock detection, and locks held by the caller's own
// transactions. Its rules are internal/lockcore's; its sessions are
// internal/sessions'. It checks lock names (Idents, UserIdent) and reads
// the monitoring view (List); the root package turns requests into
// Grants.
package locks

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/lockcore"
	"github.com/batonhq/baton/internal/txn"
)

// Observer hears how lock calls end (baton.Observer's lock half).
type Observer interface {
	LockWaited(namespace string, d time.Duration, granted bool)
	Deadlock()
}

// Config is what the service needs of its client.
type Config struct {
	Driver   driver.Driver
	ClientID string
	// Waits are the client's waiting requests, answered by the listener
	// (grants it was told of) and by the service's status checks.
	Waits *bus.Locks
	// Lease bounds background statements; PollInterval paces the checks
	// that cover a lost wake-up.
	Lease, PollInterval time.Duration
	// Listening starts the client's listener if it is not running: lock
	// waits are woken through it.
	Listening func(ctx context.Context) error
	// Closed reports whether the client is closed.
	Closed func() bool
	// HandedOn, where set, is called when a release of this client hands
	// a lock on to a waiter: the client then prepares its statements, as
	// it does on its first wait (the hand-on's run in a transaction,
	// which does not prepare on use).
	HandedOn func()
	Observer Observer
	// Logf and Log report what no caller hears of.
	Logf func(format string, a ...any)
	Log  func(what string, err error)
	// Host, PID and Owner describe this process in a transaction's hold
	// (monitoring).
	Host  string
	PID   int
	Owner string
}

// Service is one client's lock service.
type Service struct {
	cfg    Config
	drv    driver.Driver
	lk     driver.Locks // drv.Locks()
	wakeCh chan struct{}
	// poll asks Run for a check of the waiting requests at least once per
	// PollInterval while some wait (pollDue); polling says it is armed.
	// lastCheck is when Run last read their statuses (Unix ns); ended:
	// Run has returned, and nothing arms the poll again.
	poll           *time.Timer
	polling, ended atomic.Bool
	lastCheck      atomic.Int64
	// detach: the driver's statements run in a server (not
	// driver.Driver.Embedded; see statement).
	detach bool
	// What the backend's locks can do (driver.Locks' capabilities).
	many, removes, releasesInTx, adopts bool

	mu sync.Mutex
	// lastNet: the poll's last look for deadlocks (checkWaiters).
	lastNet time.Time
	// detecting: a detectIfWaiting run is under way; detectAgain: a
	// request asked for one meanwhile.
	detecting, detectAgain bool

	contended contention
	// checkFailing: the checks of the waiting requests fail (checkFailed).
	checkFailing errs.Streak
	// looks counts wake-ups that ask for a status check (Wake): a waiter
	// that saw none between the start of its request and its registration
	// missed nothing (a grant that found no waiter asks for one:
	// bus.Locks.Grant).
	looks atomic.Int64
	// background are the goroutines calls left behind (unlistLater);
	// Run's end waits for them.
	background tasks
	// sessions are the live sessions (Begin).
	sessions liveSessions
	// gates: the names waiting requests wait on, for the client's poll of
	// transactions' gates (watchGate).
	gates gateWatch
	// checks, gateLooks, netLooks and detections count the reads of the
	// waiting requests' statuses, the looks at their names' gates of
	// their own, the poll's looks at the wait graph and the runs of
	// DetectDeadlocks (the tests' Checks, GateLooks, NetLooks and
	// Detections).
	checks, gateLooks, netLooks, detections atomic.Int64
	// contentionSteps counts the statements acquireOne runs before a
	// request: fast attempts, contention reads and turnstile calls (the
	// tests' ContentionSteps: a re-entry runs none).
	contentionSteps atomic.Int64
	// turnstileOn replaces the constant turnstileOn where set (ns; the
	// tests' SetTurnstileOn).
	turnstileOn atomic.Int64
	// ownSearchOff: waiting requests do not look for cycles themselves
	// (SkipOwnSearch), which leaves the poll's net.
	ownSearchOff atomic.Bool
}

// SkipOwnSearch makes the client's waiting requests skip their own
// search for a cycle (off), as if each failed, for tests of the poll's
// net (deadlockNet).
func (l *Service) SkipOwnSearch(off bool) { l.ownSearchOff.Store(off) }

// Checks is how many times the service read its waiting requests'
// statuses.
func (l *Service) Checks() int64 { return l.checks.Load() }

// GateLooks is how many times the service looked at the gates of the
// names its requests wait on in a statement of its own (TxGatedAmong).
func (l *Service) GateLooks() int64 { return l.gateLooks.Load() }

// NetLooks is how many times the poll read the wait graph to look for
// deadlocks no request's own search found.
func (l *Service) NetLooks() int64 { return l.netLooks.Load() }

// Detections is how many times the service ran DetectDeadlocks (the
// detector's lock taken, the graph read under it).
func (l *Service) Detections() int64 { return l.detections.Load() }

// ContentionSteps is how many fast attempts, contention reads and
// turnstile calls the service's single-name acquisitions ran.
func (l *Service) ContentionSteps() int64 { return l.contentionSteps.Load() }

// tasks runs work on goroutines of its own until it is closed, then in
// the caller's; close waits for the goroutines.
type tasks struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (t *tasks) run(f func()) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		f()
		return
	}
	t.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.wg.Done()
		f()
	}()
}

func (t *tasks) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}

// New makes the service; Run must run for waits to be answered.
func New(cfg Config) *Service {
	lk := cfg.Driver.Locks()
	l := &Service{cfg: cfg, drv: cfg.Driver, lk: lk, wakeCh: make(chan struct{}, 1), detach: !cfg.Driver.Embedded(),
		many: lk.AcquiresMany(), removes: lk.RemovesInOneCall(), releasesInTx: lk.ReleasesInTx(), adopts: lk.AdoptsHolders()}
	l.poll = time.AfterFunc(time.Hour, l.pollDue)
	l.poll.Stop()
	return l
}

// statement returns the context for the statements that change the lock
// state on behalf of a call whose context is ctx. Where they run in a
// server (not driver.Driver.Embedded), it is ctx without its end, bounded by
// the later of the lease and ctx's deadline instead: a statement cut off
// by the call's deadline could still commit there after the call has
// withdrawn what it wrote, leaving a request or a holder that nobody
// waits for. The call keeps its deadline by bounding its waits in the
// server (turnstileAcquire) and by checking ctx between statements
// (retrying, inTxUntil, acquireOne).
func (l *Service) statement(ctx context.Context) (context.Context, context.CancelFunc) {
	if !l.detach {
		return ctx, func() {}
	}
	return l.cleanup(ctx)
}

// cleanup returns the context for a statement that undoes what a call
// left behind once its context may have ended (on every backend): ctx
// without its end, bounded by the lease or, when later, by ctx's
// deadline. A statement slower than the lease (one that waits for a row
// another transaction holds, on a loaded server) is not cut off while
// its caller still waits for it: a release that the server then commits
// anyway would have been reported as failed.
func (l *Service) cleanup(ctx context.Context) (context.Context, context.CancelFunc) {
	end := time.Now().Add(l.cfg.Lease)
	if d, ok := ctx.Deadline(); ok && d.After(end) {
		end = d
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}

func (l *Service) inTx(ctx context.Context, fn func(tx driver.Tx) error) error {
	return txn.InTx(ctx, l.drv, fn)
}

// inTxUntil is inTx for a call whose context is ctx: its statements run
// in sctx (statement), and it is tried again only while ctx lasts.
func (l *Service) inTxUntil(ctx, sctx context.Context, fn func(tx driver.Tx) error) error {
	return txn.Retrying(ctx, l.drv, func() error { return txn.Once(sctx, l.drv, fn) })
}

func (l *Service) retrying(ctx context.Context, op func() error) error {
	return txn.Retrying(ctx, l.drv, op)
}

// Wake makes the service check its waiting requests; it never blocks.
// The listener calls it for any wake-up that did not name its grants.
func (l *Service) Wake() {
	l.looks.Add(1)
	l.check()
}

// check makes the service check its waiting requests without counting as
// a look: a waiter's catch-up after a look it may have missed brings no
// grant anyone else could have missed (counted, each such check would
// send every request in flight to a check of its own, and so on).
func (l *Service) check() {
	select {
	case l.wakeCh <- struct{}{}:
	default:
	}
}

// Waiting tells the service whether some request of its client waits
// (bus.Locks' change hook, called under its lock): a wait arms the poll
// unless it is armed. It never blocks and wakes no goroutine (a send to
// Run on every wait cost an in-process hand-off a goroutine switch).
func (l *Service) Waiting(on bool) {
	if on && !l.ended.Load() && l.polling.CompareAndSwap(false, true) {
		l.poll.Reset(l.cfg.PollInterval)
	}
}

// pollDue runs when the poll is due. A wake-up is a hint: while some
// request waits, Run reads every waiting request's status at least once
// per PollInterval, whatever the listener does (one query per interval
// for the whole client, and none when a wake-up's check came within the
// interval). A grant whose wake-up was lost, or a listener whose safety
// net never fires (PostgreSQL's LISTEN connection hears every client's
// traffic, and its safety net waits for a quiet interval), costs a
// waiter at most an interval.
func (l *Service) pollDue() {
	l.polling.Store(false)
	if l.ended.Load() || !l.cfg.Waits.Waiting() {
		return // the next wait arms it again
	}
	interval := l.cfg.PollInterval
	next := interval
	if since := time.Since(time.Unix(0, l.lastCheck.Load())); since < interval {
		next = interval - since // a wake-up's check came meanwhile
	} else {
		l.check()
	}
	if l.polling.CompareAndSwap(false, true) {
		l.poll.Reset(next)
	}
}

// Run answers waits on each wake-up (and each due poll) until quit is
// closed.
func (l *Service) Run(quit <-chan struct{}) {
	defer func() { l.ended.Store(true); l.poll.Stop() }()
	for {
		select {
		case <-quit:
			l.background.close()
			return
		case <-l.wakeCh:
		}
		l.checkWaiters()
	}
}

// netEvery is how many poll intervals apart checkWaiters looks for
// deadlocks. Every waiting request looks for a cycle itself once it has
// waited deadlockDelay, so the look on the poll is a safety net (for a
// look that failed); it reads the wait graph in one statement and takes
// the detector's lock (a transaction of several statements) only for a
// cycle it found. Run every interval as a transaction, it made a client
// with a waiting request cost MariaDB about 15 statements a second, where
// the statuses' poll costs two (docs/benchmarks.md, "Waiting lock
// requests polled per client").
const netEvery = 5

// checkWaiters reads the status of every waiting request of this process in
// one query and hands granted, aborted or vanished requests to their
// waiters, and the names a transaction's gate holds, which the same
// query finds (driver.Locks.LockRequestStatusesGated), to the poll of
// gates (gateWatch). Every netEvery poll
// intervals it also looks for deadlocks, in case the request that closed
// a cycle could not run detection itself.
func (l *Service) checkWaiters() {
	snap := l.cfg.Waits.Snapshot()
	ids := snap.IDs
	if len(ids) == 0 {
		return
	}
	l.lastCheck.Store(time.Now().UnixNano())
	l.mu.Lock()
	net := time.Since(l.lastNet) >= netEvery*l.cfg.PollInterval
	if net {
		l.lastNet = time.Now()
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Lease)
	defer cancel()
	l.checks.Add(1)
	var st map[int64]driver.Request
	var err error
	var gated []driver.Ident
	if st, gated, err = l.lk.LockRequestStatusesGated(ctx, ids); err == nil {
		l.gatesSeen(gated)
	}
	if err == nil {
		l.cfg.Waits.Settle(snap, st)
		if net {
			err = l.deadlockNet(ctx)
		}
	}
	l.checkFailed(err)
}

// deadlockNet is the poll's look for deadlocks: the wait graph read in
// one statement, and DetectDeadlocks only when it has a cycle (the
// statement's snapshot is not the detector's, so DetectDeadlocks reads
// the graph again under its lock; a cycle, once formed, stays until a
// victim is chosen, so none is missed for long).
func (l *Service) deadlockNet(ctx context.Context) error {
	graph, err := l.drv.NoTx().LockWaitGraph(ctx)
	// Counted once the graph is read: a look that began before a cycle
	// formed, and read it, counts after the cycle's last request.
	l.netLooks.Add(1)
	if err != nil || len(lockcore.Victims(graph)) == 0 {
		return err
	}
	return l.DetectDeadlocks(ctx)
}

// checkFailed logs the failure of a check of the waiting requests (their
// statuses, or the deadlock look with them) when it is the first since
// the checks last worked: the next check retries on the next wake-up or
// poll, and a database that is away for an hour does not flood the log.
func (l *Service) checkFailed(err error) {
	if l.checkFailing.First(err) {
		l.cfg.Log("check waiting lock requests (retried on the next wake-up or poll)", err)
	}
}

// randomInt63 is a call's id: the requests of one call are withdrawn
// together.
func randomInt63() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) >> 1)
}

// modeWord names a lock mode in errors.
func modeWord(m driver.LockMode) string {
	if m == driver.ModeWrite {
		return "write"
	}
	return "read"
}

// describe names an identifier in errors.
func describe(id driver.Ident) string {
	if id.Kind == driver.KindUser {
		return fmt.Sprintf("user lock %q", id.Name)
	}
	return fmt.Sprintf("%q in namespace %q", id.Name, id.NS)
}
