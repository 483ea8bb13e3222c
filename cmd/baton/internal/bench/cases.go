package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/benchrec"
)

// openClients opens n baton clients on the scratch database, each as a
// separate process would; closeAll closes them all and may be called again.
func (r *runner) openClients(ctx context.Context, n int) ([]*baton.Client, func(), error) {
	return openClients(ctx, r.sc.dsn, n)
}

// openClients opens n clients on a DSN, as n processes would.
func openClients(ctx context.Context, dsn string, n int) (cs []*baton.Client, closeAll func(), err error) {
	closeAll = func() {
		for _, c := range cs {
			_ = c.Close()
		}
	}
	for range n {
		c, err := baton.Open(ctx, dsn, baton.Options{Name: "baton-bench"})
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("open client: %w", err)
		}
		cs = append(cs, c)
	}
	return cs, closeAll, nil
}

// openSessions opens n clients with one session each.
func (r *runner) openSessions(ctx context.Context, n int) ([]*baton.Client, []*baton.Session, func(), error) {
	cs, closeAll, err := r.openClients(ctx, n)
	if err != nil {
		return nil, nil, nil, err
	}
	ss := make([]*baton.Session, n)
	for i, c := range cs {
		if ss[i], err = c.NewSession(ctx); err != nil {
			closeAll()
			return nil, nil, nil, err
		}
	}
	return cs, ss, closeAll, nil
}

// share is the time one side of a case runs: half the duration when the
// backend has a baseline, all of it otherwise.
func (r *runner) share() time.Duration {
	if r.cfg.Backend == "sqlite" {
		return r.cfg.Duration
	}
	return r.cfg.Duration / 2
}

// lockPair measures uncontended Lock(write, 0) + Release pairs, then the
// native pair on the same server.
func (r *runner) lockPair(ctx context.Context) (*Record, error) {
	rec, err := r.sessionLoop(ctx, CaseLockPair, 1, func(ss []*baton.Session) (func() error, error) {
		s := ss[0]
		return func() error {
			if _, err := s.Lock(ctx, ns, baton.Write, 0, "pair"); err != nil {
				return err
			}
			n, err := s.Release(ctx, ns)
			if err == nil && n != 1 {
				err = fmt.Errorf("release released %d instances, want 1", n)
			}
			return err
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return r.throughputBaseline(ctx, rec, "", func(conn nativeConn) error {
		if err := conn.lock(ctx, false); err != nil {
			return err
		}
		return conn.unlock(ctx)
	})
}

// tryHeld measures Lock(write, 0) on a name another client's session
// holds, refused with ErrTimeout (the "run unless already running" of a
// cron job), then the native try on a lock another connection holds.
func (r *runner) tryHeld(ctx context.Context) (*Record, error) {
	rec, err := r.sessionLoop(ctx, CaseTryHeld, 2, func(ss []*baton.Session) (func() error, error) {
		if _, err := ss[0].Lock(ctx, ns, baton.Write, 0, "held"); err != nil {
			return nil, err
		}
		return func() error {
			if _, err := ss[1].Lock(ctx, ns, baton.Write, 0, "held"); !errors.Is(err, baton.ErrTimeout) {
				return fmt.Errorf("a try on a held lock returned %v, want ErrTimeout", err)
			}
			return nil
		}, nil
	})
	if err != nil {
		return nil, err
	}
	nat := r.native()
	if nat == nil {
		return rec, nil
	}
	defer nat.close()
	holder, err := nat.open(ctx)
	if err != nil {
		return rec, fmt.Errorf("baseline %s: %w", nat.name(), err)
	}
	defer holder.close()
	if err := holder.lock(ctx, false); err != nil {
		return rec, fmt.Errorf("baseline %s: %w", nat.name(), err)
	}
	return r.throughputOn(ctx, nat, rec, " refused", func(conn nativeConn) error {
		return conn.tryRefused(ctx)
	})
}

// multi10 takes 10 names in one Lock call and releases them in one
// Release, against 10 native lock calls and one release-all on one
// connection.
func (r *runner) multi10(ctx context.Context) (*Record, error) {
	names := make([]string, 10)
	for i := range names {
		names[i] = fmt.Sprintf("multi.%d", i)
	}
	rec, err := r.sessionLoop(ctx, CaseMulti10, 1, func(ss []*baton.Session) (func() error, error) {
		s := ss[0]
		return func() error {
			if _, err := s.Lock(ctx, ns, baton.Write, 0, names...); err != nil {
				return err
			}
			n, err := s.Release(ctx, ns)
			if err == nil && n != len(names) {
				err = fmt.Errorf("release released %d instances, want %d", n, len(names))
			}
			return err
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return r.throughputBaseline(ctx, rec, " ×10", func(conn nativeConn) error {
		if err := conn.lockMany(ctx, len(names)); err != nil {
			return err
		}
		return conn.unlockAll(ctx)
	})
}

// reenter measures a re-entered user-level lock: GetLock twice, then
// ReleaseLock twice (each one instance, RELEASE_LOCK's rule), on one
// session and one name; then the native lock taken twice and released
// twice on one connection.
func (r *runner) reenter(ctx context.Context) (*Record, error) {
	rec, err := r.sessionLoop(ctx, CaseReenter, 1, func(ss []*baton.Session) (func() error, error) {
		s := ss[0]
		return func() error {
			for range 2 {
				if ok, err := s.GetLock(ctx, "reenter", 0); err != nil || !ok {
					return fmt.Errorf("GetLock of a name the session holds or nobody does: %v, %w", ok, err)
				}
			}
			for range 2 {
				res, err := s.ReleaseLock(ctx, "reenter")
				if err == nil && res != baton.Released {
					err = fmt.Errorf("ReleaseLock of a held instance: %v, want Released", res)
				}
				if err != nil {
					return err
				}
			}
			return nil
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return r.throughputBaseline(ctx, rec, " ×2", func(conn nativeConn) error {
		for range 2 {
			if err := conn.lock(ctx, false); err != nil {
				return err
			}
		}
		for range 2 {
			if err := conn.unlock(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// sessionLoop opens n sessions, lets setup prepare them and name the call
// to time, runs it for the case's share and returns its record. The
// sessions are closed before it returns, so that their heartbeats and
// listeners stay out of the native baseline measured after it.
func (r *runner) sessionLoop(ctx context.Context, name string, n int, setup func([]*baton.Session) (func() error, error)) (*Record, error) {
	_, ss, closeAll, err := r.openSessions(ctx, n)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	op, err := setup(ss)
	if err != nil {
		return nil, err
	}
	lat, elapsed, err := loop(r.share(), op)
	if err != nil {
		return nil, err
	}
	return r.throughputRecord(name, lat, elapsed), nil
}

// throughputRecord is a throughput case's record: calls per s over the
// time they took in all, and their latency percentiles.
func (r *runner) throughputRecord(name string, lat []time.Duration, elapsed time.Duration) *Record {
	st := benchrec.Summarize(lat)
	return &Record{Name: name, Backend: r.cfg.Backend, Ops: st.N,
		OpsPerSec: benchrec.Round(float64(st.N) / elapsed.Seconds()), P50us: benchrec.Round(st.P50), P99us: benchrec.Round(st.P99)}
}

// throughputBaseline measures op on one native connection, when the
// backend has a native lock, and completes rec with it (ratio of ops/s).
func (r *runner) throughputBaseline(ctx context.Context, rec *Record, suffix string, op func(nativeConn) error) (*Record, error) {
	nat := r.native()
	if nat == nil {
		return rec, nil
	}
	defer nat.close()
	return r.throughputOn(ctx, nat, rec, suffix, op)
}

// throughputOn is throughputBaseline on a given native lock.
func (r *runner) throughputOn(ctx context.Context, nat nativeLock, rec *Record, suffix string, op func(nativeConn) error) (*Record, error) {
	conn, err := nat.open(ctx)
	if err != nil {
		return rec, fmt.Errorf("baseline %s: %w", nat.name(), err)
	}
	defer conn.close()
	nlat, nelapsed, err := loop(r.share(), func() error { return op(conn) })
	if err != nil {
		return rec, fmt.Errorf("baseline %s: %w", nat.name(), err)
	}
	nst := benchrec.Summarize(nlat)
	rec.Baseline = nat.name() + suffix
	rec.BaselineOpsPerSec = benchrec.Round(float64(nst.N) / nelapsed.Seconds())
	rec.BaselineP50us = benchrec.Round(nst.P50)
	if rec.BaselineOpsPerSec > 0 {
		rec.Ratio = benchrec.Round(rec.OpsPerSec / rec.BaselineOpsPerSec)
	}
	return rec, nil
}

// loop warms op up, then runs it for d, and at least minRounds times,
// and returns the latency of each call and the time the measured calls
// took in all.
func loop(d time.Duration, op func() error) ([]time.Duration, time.Duration, error) {
	for range 50 {
		if err := op(); err != nil {
			return nil, 0, err
		}
	}
	lat := make([]time.Duration, 0, 1<<14)
	start := time.Now()
	end := start.Add(d)
	for {
		t0 := time.Now()
		if !t0.Before(end) && len(lat) >= minRounds {
			break
		}
		if err := op(); err != nil {
			return nil, 0, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, time.Since(start), nil
}

// handoffSide is one implementation of the hand-off: a holder and a
// waiter that take turns on one lock.
type handoffSide struct {
	// hold takes the lock for the holder; nobody else holds it.
	hold func(ctx context.Context) error
	// wait starts the waiter's blocking acquisition and returns at once;
	// the channel delivers when the waiter got the lock (the waiter's own
	// clock reading) or its error.
	wait func(ctx context.Context) <-chan acquired
	// waiting reports whether the waiter is visibly queued behind the
	// holder.
	waiting func(ctx context.Context) (bool, error)
	// release releases the holder's lock: the timed call.
	release func(ctx context.Context) error
	// waiterRelease releases the waiter's lock after the round.
	waiterRelease func(ctx context.Context) error
}

type acquired struct {
	at  time.Time
	err error
}

// runHandoff measures hand-offs until handoffRounds or the duration (at
// least minRounds), the waiter queued for pause before each release.
func runHandoff(ctx context.Context, d, pause time.Duration, h handoffSide) ([]time.Duration, error) {
	if err := h.hold(ctx); err != nil {
		return nil, fmt.Errorf("holder: %w", err)
	}
	var lat []time.Duration
	start := time.Now()
	for len(lat) < handoffRounds && (len(lat) < minRounds || time.Since(start) < d) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		got := h.wait(ctx)
		if err := waitUntil(ctx, h.waiting, got); err != nil {
			return nil, fmt.Errorf("waiter: %w", err)
		}
		time.Sleep(pause)
		t0 := time.Now()
		if err := h.release(ctx); err != nil {
			return nil, fmt.Errorf("holder release: %w", err)
		}
		var a acquired
		select {
		case a = <-got:
		case <-time.After(30 * time.Second):
			return nil, errors.New("waiter did not get the lock within 30s of its release")
		}
		if a.err != nil {
			return nil, fmt.Errorf("waiter: %w", a.err)
		}
		lat = append(lat, a.at.Sub(t0))
		if err := h.waiterRelease(ctx); err != nil {
			return nil, fmt.Errorf("waiter release: %w", err)
		}
		if err := h.hold(ctx); err != nil {
			return nil, fmt.Errorf("holder: %w", err)
		}
	}
	return lat, h.release(ctx)
}

// waitUntil polls cond until it holds, for at most 10s; a result arriving
// on early means the waiter did not wait at all, which is an error.
func waitUntil(ctx context.Context, cond func(context.Context) (bool, error), early <-chan acquired) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := cond(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case a := <-early:
			if a.err != nil {
				return a.err
			}
			return errors.New("got the lock while another session held it")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Microsecond):
		}
		if time.Now().After(deadline) {
			return errors.New("not seen waiting within 10s")
		}
	}
}

// pendingIn reports whether the session has a waiting request, as the
// monitoring view shows it.
func pendingIn(ctx context.Context, c *baton.Client, sessionID string) (bool, error) {
	ls, err := c.Locks(ctx)
	if err != nil {
		return false, err
	}
	for _, l := range ls {
		if l.Session == sessionID && l.Status == "PENDING" {
			return true, nil
		}
	}
	return false, nil
}

// queuedIn reports whether the session waits for a lock: PENDING in the
// monitoring view, or (tw, when the backend has one) any baton session
// waiting in the server behind a turnstile, which the view lists only
// after its first 25 ms.
func queuedIn(c *baton.Client, sessionID string, tw nativeLock) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		if ok, err := pendingIn(ctx, c, sessionID); ok || err != nil || tw == nil {
			return ok, err
		}
		return tw.turnstileWaiting(ctx)
	}
}

// batonHandoff is the hand-off between two sessions of two clients.
func batonHandoff(holderC *baton.Client, holder, waiter *baton.Session, name string, tw nativeLock) handoffSide {
	return handoffSide{
		hold: func(ctx context.Context) error {
			_, err := holder.Lock(ctx, ns, baton.Write, 0, name)
			return err
		},
		wait: func(ctx context.Context) <-chan acquired {
			ch := make(chan acquired, 1)
			go func() {
				_, err := waiter.Lock(ctx, ns, baton.Write, baton.Forever, name)
				ch <- acquired{at: time.Now(), err: err}
			}()
			return ch
		},
		waiting: queuedIn(holderC, waiter.ID(), tw),
		release: func(ctx context.Context) error {
			_, err := holder.Release(ctx, ns)
			return err
		},
		waiterRelease: func(ctx context.Context) error {
			_, err := waiter.Release(ctx, ns)
			return err
		},
	}
}

// handoff measures the hand-off between two clients of one process, then
// the native one.
func (r *runner) handoff(ctx context.Context) (*Record, error) {
	rec, nst, err := r.handoffAfter(ctx, CaseHandoff, settle, false)
	r.nativeHandoff = nst
	return rec, err
}

// handoffWaited is handoff with the waiter queued for waitedSettle before
// each release.
func (r *runner) handoffWaited(ctx context.Context) (*Record, error) {
	rec, _, err := r.handoffAfter(ctx, CaseHandoffWaited, waitedSettle, false)
	return rec, err
}

// handoffTable is handoffWaited with the waiter's session holding
// another lock all along, so that its waits go to the lock table.
func (r *runner) handoffTable(ctx context.Context) (*Record, error) {
	rec, _, err := r.handoffAfter(ctx, CaseHandoffTable, waitedSettle, true)
	return rec, err
}

// handoffAfter measures the hand-off between two clients of one process,
// the waiter queued for pause before each release (its session holding
// another lock, in another namespace, when holdOther is set), then the
// native one, whose summary it returns too (nil without a baseline).
func (r *runner) handoffAfter(ctx context.Context, caseName string, pause time.Duration, holdOther bool) (*Record, *benchrec.Stats, error) {
	cs, ss, closeAll, err := r.openSessions(ctx, 2)
	if err != nil {
		return nil, nil, err
	}
	defer closeAll()
	a, b := ss[0], ss[1]
	if holdOther {
		if _, err := b.Lock(ctx, ns+"_other", baton.Write, 0, "held"); err != nil {
			return nil, nil, fmt.Errorf("waiter's other lock: %w", err)
		}
	}
	tw := r.native()
	if tw != nil {
		defer tw.close()
	}
	lat, err := runHandoff(ctx, r.share(), pause, batonHandoff(cs[0], a, b, caseName, tw))
	if err != nil {
		return nil, nil, err
	}
	rec := benchrec.LatencyRecord(caseName, r.cfg.Backend, benchrec.Summarize(lat))
	closeAll()

	nat := r.native()
	if nat == nil {
		return rec, nil, nil
	}
	defer nat.close()
	nlat, err := nativeHandoff(ctx, nat, r.share(), pause)
	if err != nil {
		return rec, nil, fmt.Errorf("baseline %s: %w", nat.name(), err)
	}
	nst := benchrec.Summarize(nlat)
	rec.WithLatencyBaseline(nat.name(), nst)
	return rec, &nst, nil
}

// nativeHandoff runs the hand-off with the native lock on two dedicated
// connections.
func nativeHandoff(ctx context.Context, nat nativeLock, d, pause time.Duration) ([]time.Duration, error) {
	holder, err := nat.open(ctx)
	if err != nil {
		return nil, err
	}
	defer holder.close()
	waiter, err := nat.open(ctx)
	if err != nil {
		return nil, err
	}
	defer waiter.close()
	return runHandoff(ctx, d, pause, handoffSide{
		hold: func(ctx context.Context) error { return holder.lock(ctx, false) },
		wait: func(ctx context.Context) <-chan acquired {
			ch := make(chan acquired, 1)
			go func() {
				err := waiter.lock(ctx, true)
				ch <- acquired{at: time.Now(), err: err}
			}()
			return ch
		},
		waiting:       func(ctx context.Context) (bool, error) { return nat.waiting(ctx, waiter) },
		release:       holder.unlock,
		waiterRelease: waiter.unlock,
	})
}

// contend8 runs 8 sessions over 2 clients that loop Lock(write, forever) +
// Release on one name, then the same with the native lock on 8
// connections. With a baseline each side gets half the duration, after a
// warm-up each (contend).
func (r *runner) contend8(ctx context.Context) (*Record, error) {
	return r.contend8Mode(ctx, CaseContend8, baton.Write)
}

// readers8 is contend8 with read locks, which do not conflict: the
// baseline is PostgreSQL's shared advisory lock (MySQL's GET_LOCK has no
// shared mode, so there is none there).
func (r *runner) readers8(ctx context.Context) (*Record, error) {
	return r.contend8Mode(ctx, CaseReaders8, baton.Read)
}

// contend8Mode is contend8 and readers8: 8 sessions over 2 clients loop
// Lock(mode, forever) + Release on one name.
func (r *runner) contend8Mode(ctx context.Context, name string, mode baton.Mode) (*Record, error) {
	const workers = 8
	shared := mode == baton.Read
	var nat nativeLock
	if !shared || r.cfg.Backend == "postgres" {
		// MySQL's GET_LOCK has no shared mode (sharedConn): readers8
		// has no baseline there.
		nat = r.native()
	}
	d := r.cfg.Duration // all of it to baton when there is no baseline
	if nat != nil {
		defer nat.close()
		d = r.share()
	}
	cs, closeAll, err := r.openClients(ctx, 2)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	ss := make([]*baton.Session, workers)
	for i := range ss {
		if ss[i], err = cs[i%2].NewSession(ctx); err != nil {
			return nil, err
		}
	}
	// A bound for a waiter stuck at the end; never reached when the lock
	// is handed on.
	wctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	lat, elapsed, err := contend(d, workers, func(i int) error {
		if _, err := ss[i].Lock(wctx, ns, mode, baton.Forever, "contend"); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if _, err := ss[i].Release(wctx, ns); err != nil {
			return fmt.Errorf("release: %w", err)
		}
		return nil
	})
	closeAll()
	if err != nil {
		return nil, err
	}
	st := benchrec.Summarize(lat)
	rec := &Record{Name: name, Backend: r.cfg.Backend, Ops: st.N,
		OpsPerSec: benchrec.Round(float64(st.N) / elapsed.Seconds()), P50us: benchrec.Round(st.P50), P99us: benchrec.Round(st.P99)}
	if nat == nil {
		return rec, nil
	}
	return rec, contendNative(ctx, wctx, nat, workers, d, shared, rec)
}

// contendNative measures contend8's baseline (readers8's with shared) on
// workers native connections and adds it to rec.
func contendNative(ctx, wctx context.Context, nat nativeLock, workers int, d time.Duration, shared bool, rec *Record) error {
	conns := make([]nativeConn, workers)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.close()
			}
		}
	}()
	for i := range conns {
		var err error
		if conns[i], err = nat.open(ctx); err != nil {
			return fmt.Errorf("baseline %s: %w", nat.name(), err)
		}
	}
	nlat, nelapsed, err := contend(d, workers, func(i int) error {
		if shared {
			sc, ok := conns[i].(sharedConn)
			if !ok {
				return fmt.Errorf("%s has no shared mode", nat.name())
			}
			if err := sc.lockShared(wctx); err != nil {
				return err
			}
			return sc.unlockShared(wctx)
		}
		if err := conns[i].lock(wctx, true); err != nil {
			return err
		}
		return conns[i].unlock(wctx)
	})
	if err != nil {
		return fmt.Errorf("baseline %s: %w", nat.name(), err)
	}
	nst := benchrec.Summarize(nlat)
	rec.Baseline = nat.name()
	if shared {
		rec.Baseline += "_shared"
	}
	rec.BaselineOpsPerSec = benchrec.Round(float64(nst.N) / nelapsed.Seconds())
	rec.BaselineP50us = benchrec.Round(nst.P50)
	if rec.BaselineOpsPerSec > 0 {
		rec.Ratio = benchrec.Round(rec.OpsPerSec / rec.BaselineOpsPerSec)
	}
	return nil
}

// contendWarmUp is how long contend runs its loop before it counts: the
// baseline opens its connections before it starts, and baton's first
// calls open the pool's connections and the sessions' lines (on
// PostgreSQL, 8 sessions at once take a few hundred milliseconds to reach
// their pace).
const contendWarmUp = 500 * time.Millisecond

// contend runs op(i) in a loop on workers goroutines for contendWarmUp
// and then d (and until minRounds calls were counted), and returns the latency of every call begun after the
// warm-up and the time from the warm-up's end until the last worker
// stopped.
func contend(d time.Duration, workers int, op func(i int) error) ([]time.Duration, time.Duration, error) {
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	start := time.Now().Add(contendWarmUp)
	end := start.Add(d)
	// counted: calls begun after the warm-up; the loop runs until there
	// are minRounds of them, however slow they are.
	var counted atomic.Int64
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			var err error
			for time.Now().Before(end) || counted.Load() < minRounds {
				t0 := time.Now()
				if err = op(i); err != nil {
					break
				}
				if !t0.Before(start) {
					mine = append(mine, time.Since(t0))
					counted.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, time.Since(start), errors.Join(errs...)
}

// deadlockDetect forms a 2-cycle between sessions of two clients and times
// the request that closes it until its ErrDeadlock.
func (r *runner) deadlockDetect(ctx context.Context) (*Record, error) {
	cs, ss, closeAll, err := r.openSessions(ctx, 2)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	s1, s2 := ss[0], ss[1]
	var lat []time.Duration
	start := time.Now()
	for len(lat) < deadlockRounds && (len(lat) < minRounds || time.Since(start) < r.cfg.Duration) {
		d, err := deadlockRound(ctx, cs[0], s1, s2)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", len(lat)+1, err)
		}
		lat = append(lat, d)
	}
	return benchrec.LatencyRecord(CaseDeadlockDetect, r.cfg.Backend, benchrec.Summarize(lat)), nil
}

func deadlockRound(ctx context.Context, c1 *baton.Client, s1, s2 *baton.Session) (time.Duration, error) {
	if _, err := s1.Lock(ctx, ns, baton.Write, 0, "a"); err != nil {
		return 0, fmt.Errorf("s1 lock a: %w", err)
	}
	if _, err := s2.Lock(ctx, ns, baton.Write, 0, "b"); err != nil {
		return 0, fmt.Errorf("s2 lock b: %w", err)
	}
	// Bounds for a detector that never fires.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got1 := make(chan acquired, 1)
	go func() {
		_, err := s1.Lock(rctx, ns, baton.Write, baton.Forever, "b")
		got1 <- acquired{at: time.Now(), err: err}
	}()
	cleanup := func() {
		_, _ = s2.Release(ctx, ns)
		select {
		case <-got1:
		case <-time.After(10 * time.Second):
		}
		_, _ = s1.Release(ctx, ns)
	}
	if err := waitUntil(ctx, func(ctx context.Context) (bool, error) { return pendingIn(ctx, c1, s1.ID()) }, got1); err != nil {
		cleanup()
		return 0, fmt.Errorf("s1 waiting for b: %w", err)
	}
	time.Sleep(settle)
	t0 := time.Now()
	_, err := s2.Lock(rctx, ns, baton.Read, baton.Forever, "a")
	d := time.Since(t0)
	if !errors.Is(err, baton.ErrDeadlock) {
		cleanup()
		select {
		case a := <-got1:
			if errors.Is(a.err, baton.ErrDeadlock) {
				return 0, fmt.Errorf("the write waiter was chosen as the deadlock victim, not the read request that closed the cycle (read request: %v)", err)
			}
		default:
		}
		if err == nil {
			return 0, errors.New("s2 got read lock a while s1 held it for write")
		}
		return 0, fmt.Errorf("s2 read a: got %v after %v, want ErrDeadlock", err, d.Round(time.Millisecond))
	}
	// s2 gives b up: s1 gets it, then releases both.
	if _, err := s2.Release(ctx, ns); err != nil {
		return 0, fmt.Errorf("s2 release: %w", err)
	}
	select {
	case a := <-got1:
		if a.err != nil {
			return 0, fmt.Errorf("s1 lock b after the victim released it: %w", a.err)
		}
	case <-time.After(10 * time.Second):
		return 0, errors.New("s1 did not get b within 10s of its release")
	}
	if _, err := s1.Release(ctx, ns); err != nil {
		return 0, fmt.Errorf("s1 release: %w", err)
	}
	return d, nil
}
