package baton_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// outage is one stop/start of a private server.
type outage struct{ from, to time.Time }

// restartAll stops and starts db once per mode, pausing between, and
// returns the outages.
func restartAll(db privateDB, pause time.Duration, between func()) []outage {
	var out []outage
	for _, mode := range db.modes() {
		time.Sleep(pause)
		o := outage{from: time.Now()}
		db.stop(mode)
		db.start()
		o.to = time.Now()
		out = append(out, o)
		if between != nil {
			between()
		}
	}
	return out
}

// TestRestartMidDrain: workers draining a queue survive database restarts
// (PostgreSQL fast, immediate and kill -9; MariaDB clean and kill -9), each
// on its own; every message is handled, a message is handled twice only if
// its first run was in flight during an outage; a lock holder hears it lost
// its session or keeps a lock the database still gives it, and the lock is
// usable afterwards.
func TestRestartMidDrain(t *testing.T) {
	eachPrivate(t, func(t *testing.T, db privateDB) {
		const lease = time.Second
		opts := baton.Options{Lease: lease, PollInterval: 100 * time.Millisecond}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c := openDSN(t, db.dsn(), opts)
		type run struct{ from, to time.Time }
		var mu sync.Mutex
		runs := map[string][]run{}
		workDone := make(chan error, 2)
		var workers []*baton.Client
		for w := 0; w < 2; w++ {
			wc := openDSN(t, db.dsn(), opts)
			workers = append(workers, wc)
			go func() {
				workDone <- wc.Work(ctx, "rq", func(ctx context.Context, m *baton.Message) error {
					r := run{from: time.Now()}
					time.Sleep(5 * time.Millisecond)
					r.to = time.Now()
					mu.Lock()
					runs[string(m.Payload)] = append(runs[string(m.Payload)], r)
					mu.Unlock()
					return nil
				}, baton.WorkerOptions{Concurrency: 2})
			}()
		}
		holder := session(t, c)
		mustLock(t, holder, "rs", baton.Write, "x")
		enqueued := 0
		enqueue := func(k int) {
			for i := 0; i < k; i++ {
				p := fmt.Sprint("m", enqueued)
				batontest.Retry(t, time.Minute, "enqueue", func() error { _, err := c.Enqueue(ctx, "rq", []byte(p)); return err })
				enqueued++
			}
		}
		enqueue(100)
		outages := restartAll(db, 300*time.Millisecond, func() {
			select {
			case err := <-workDone:
				t.Fatalf("a worker stopped: %v", err)
			default:
			}
			enqueue(100)
		})
		deadline := time.Now().Add(60 * time.Second)
		for {
			mu.Lock()
			got := len(runs)
			mu.Unlock()
			if got == enqueued {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("handled %d of %d messages after the restarts", got, enqueued)
			}
			select {
			case err := <-workDone:
				t.Fatalf("a worker stopped: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
		}
		// A worker whose session was lost away from the outages (a lease
		// renewal held off for a whole second on a busy machine) gets its
		// claims back too: a run then handled again is no fault.
		var lost int64
		for _, wc := range workers {
			lost += baton.SessionsLost(wc)
		}
		mu.Lock()
		dups := 0
		for p, rs := range runs {
			for _, r := range rs[:len(rs)-1] {
				inFlight := false
				for _, o := range outages {
					if !r.to.Before(o.from.Add(-lease)) && !r.from.After(o.to.Add(lease)) {
						inFlight = true
					}
				}
				switch {
				case !inFlight && lost == 0:
					t.Errorf("message %s handled again although its run %v-%v was not in flight during an outage", p, r.from, r.to)
				case !inFlight:
					t.Logf("message %s handled again away from the outages; the workers lost %d sessions", p, lost)
				}
				dups++
			}
		}
		mu.Unlock()
		t.Logf("%d messages, %d handled twice (in flight during %d restarts)", enqueued, dups, len(outages))
		// The holder either lost its session (and heard it) or still holds
		// the lock; either way the lock ends up usable.
		select {
		case <-holder.Done():
			wantErr(t, holder.Err(), baton.ErrSessionLost)
		case <-time.After(3 * lease):
			if _, err := holder.Release(ctxT(t), "rs"); err != nil {
				t.Fatalf("holder alive but cannot release: %v", err)
			}
		}
		s2 := session(t, c)
		if _, err := s2.Lock(ctxT(t), "rs", baton.Write, 10*time.Second, "x"); err != nil {
			t.Fatalf("the lock was not free after the restarts: %v", err)
		}
	})
}

// section is one holder's time with the lock: from the grant until it
// released the lock or heard its session was lost, whichever came first.
type section struct {
	from, to time.Time
	token    int64
	who      int
}

// lockLoop takes and releases one write lock again and again with sessions
// of c, opening a new session whenever one is lost, until stop.
func lockLoop(c *baton.Client, who int, hold time.Duration, stop <-chan struct{}, out chan<- section) {
	var s *baton.Session
	var lostAt time.Time
	var lostMu sync.Mutex
	for {
		select {
		case <-stop:
			return
		default:
		}
		if s == nil || s.Err() != nil {
			ns, err := c.NewSession(context.Background())
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			s = ns
			go func(s *baton.Session) {
				<-s.Done()
				lostMu.Lock()
				lostAt = time.Now()
				lostMu.Unlock()
			}(s)
			lostMu.Lock()
			lostAt = time.Time{}
			lostMu.Unlock()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		g, err := s.Lock(ctx, "loop", baton.Write, 3*time.Second, "x")
		cancel()
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		sec := section{from: time.Now(), token: g[0].Token, who: who}
		time.Sleep(hold)
		sec.to = time.Now()
		select {
		case <-s.Done():
			// Lost while "holding": the section ended when the owner heard.
			for {
				lostMu.Lock()
				at := lostAt
				lostMu.Unlock()
				if !at.IsZero() {
					sec.to = at
					break
				}
				time.Sleep(time.Millisecond)
			}
		default:
		}
		out <- sec
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = s.Release(ctx, "loop")
		cancel()
	}
}

// TestLockLoopAcrossRestarts: three clients take one write lock in turn
// while the database restarts in every mode; the critical sections (grant
// to release, or to the moment the owner heard it was lost) never overlap
// and the fencing tokens of successive holders strictly increase. A holder
// stops acting as one when it calls Release or hears it lost its session.
func TestLockLoopAcrossRestarts(t *testing.T) {
	eachPrivate(t, func(t *testing.T, db privateDB) {
		opts := baton.Options{Lease: 2 * time.Second, PollInterval: 100 * time.Millisecond}
		stop := make(chan struct{})
		out := make(chan section, 10000)
		var wg sync.WaitGroup
		for i := 0; i < 3; i++ {
			c := openDSN(t, db.dsn(), opts)
			wg.Add(1)
			// One client holds the lock long enough that a restart
			// usually comes while it holds it.
			hold := 15 * time.Millisecond
			if i == 0 {
				hold = 700 * time.Millisecond
			}
			go func(i int) { defer wg.Done(); lockLoop(c, i, hold, stop, out) }(i)
		}
		outages := restartAll(db, 1500*time.Millisecond, nil)
		time.Sleep(3 * time.Second) // the loops carry on after the last restart
		close(stop)
		wg.Wait()
		close(out)
		var secs []section
		for s := range out {
			secs = append(secs, s)
		}
		sort.Slice(secs, func(i, j int) bool { return secs[i].from.Before(secs[j].from) })
		after := 0
		for i, s := range secs {
			if s.from.After(outages[len(outages)-1].to) {
				after++
			}
			if i == 0 {
				continue
			}
			p := secs[i-1]
			if !p.to.Before(s.from) {
				t.Errorf("two holders: client %d held the lock %v-%v (token %d), client %d was granted at %v (token %d), %v before the first let go",
					p.who, p.from.Format("15:04:05.000"), p.to.Format("15:04:05.000"), p.token, s.who, s.from.Format("15:04:05.000"), s.token, p.to.Sub(s.from))
			}
			if s.token <= p.token {
				t.Errorf("fencing token went from %d to %d", p.token, s.token)
			}
		}
		if after == 0 {
			t.Fatalf("no lock was granted after the last restart (%d before)", len(secs))
		}
		t.Logf("%d critical sections across %d restarts, %d after the last", len(secs), len(outages), after)
	})
}

// TestOutageLongerThanLease: the database is down for longer than the lease
// while a lock is held and awaited by two clients. Within lease + 1 s of
// its return the lock is free, or held by a session that is alive and
// knows it holds it.
func TestOutageLongerThanLease(t *testing.T) {
	eachPrivate(t, func(t *testing.T, db privateDB) {
		const lease = time.Second
		opts := baton.Options{Lease: lease, PollInterval: 100 * time.Millisecond}
		for _, mode := range db.modes() {
			hc, wc, pc := openDSN(t, db.dsn(), opts), openDSN(t, db.dsn(), opts), openDSN(t, db.dsn(), opts)
			holder, waiter := session(t, hc), session(t, wc)
			// After the previous mode's crash no lock is granted until the
			// longest lease in use has passed: wait for it.
			if _, err := holder.Lock(ctxT(t), "out", baton.Write, 5*lease, "x"); err != nil {
				t.Fatalf("%s: first lock: %v", mode, err)
			}
			got := waiting(t, wc, waiter, "out", baton.Write, baton.Forever, "x")
			db.stop(mode)
			time.Sleep(2 * lease)
			db.start()
			back := time.Now()
			var werr error
			select {
			case werr = <-got:
			case <-time.After(lease + time.Second):
				t.Fatalf("%s: the waiter neither got the lock nor heard it lost within lease + 1 s", mode)
			}
			select {
			case <-holder.Done():
			default:
				t.Fatalf("%s: the holder still believes it holds the lock after an outage of twice the lease", mode)
			}
			var probe *baton.Session
			batontest.Retry(t, time.Minute, "probe session", func() (err error) { probe, err = pc.NewSession(ctxT(t)); return err })
			_, perr := probe.Lock(ctxT(t), "out", baton.Write, 0, "x")
			switch {
			case werr == nil:
				select {
				case <-waiter.Done():
					t.Fatalf("%s: the waiter was granted with a session already lost", mode)
				default:
				}
				wantErr(t, perr, baton.ErrTimeout) // held by the waiter, who knows it
			case errors.Is(werr, baton.ErrSessionLost):
				for perr != nil && time.Since(back) < lease+time.Second {
					time.Sleep(20 * time.Millisecond)
					if errors.Is(perr, baton.ErrSessionLost) {
						// The probe's own 1 s lease ran out on a busy
						// machine (its renewals were held off): a new
						// session looks again.
						batontest.Retry(t, time.Minute, "probe session", func() (err error) { probe, err = pc.NewSession(ctxT(t)); return err })
					}
					_, perr = probe.Lock(ctxT(t), "out", baton.Write, 0, "x")
				}
				if perr != nil {
					t.Fatalf("%s: waiter lost, and the lock is not free within lease + 1 s: %v", mode, perr)
				}
			default:
				t.Fatalf("%s: waiter: %v", mode, werr)
			}
			t.Logf("%s: waiter %v, lock settled %v after the database came back", mode, werr, time.Since(back))
			for _, c := range []*baton.Client{hc, wc, pc} {
				_ = c.Close()
			}
		}
	})
}
