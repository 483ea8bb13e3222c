package baton_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// waitLost waits until the session reports its loss.
func waitLost(t *testing.T, s *baton.Session) time.Time {
	t.Helper()
	await(t, s.Done(), 20*time.Second, "session loss never reported")
	at := time.Now()
	wantErr(t, s.Err(), baton.ErrSessionLost)
	return at
}

// loseToWaiter has a session of cut take a write lock on ns/x, waits until
// waiter (a session of other) waits for it, then cuts the holder off with
// cutOff: it returns when the holder was told it lost its session and when
// the waiter was granted the lock.
//
// A loaded machine can lose the holder's session before the test cuts it
// off (its renewals come late), and the waiter is then granted before it
// was ever seen waiting. The holder must still have heard "lost" first,
// which is checked; the waiter lets go and the scenario starts again with a
// new session of cut, so that every call ends in a cut-off holder.
func loseToWaiter(t *testing.T, cut, other *baton.Client, waiter *baton.Session, ns string, cutOff func()) (lostAt, grantedAt time.Time) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		holder := session(t, cut)
		lost := lostTime(holder)
		mustLock(t, holder, ns, baton.Write, "x")
		granted := make(chan time.Time, 1)
		go func() {
			_, err := waiter.Lock(context.Background(), ns, baton.Write, baton.Forever, "x")
			if err != nil {
				t.Error(err)
			}
			granted <- time.Now()
		}()
		if at, early := pendingOr(t, other, waiter, granted); early {
			lostAt := await(t, lost, 20*time.Second, "the holder lost its lock to the waiter but never heard it lost its session")
			if !lostAt.Before(at) {
				t.Fatalf("holder lost before the cut-off heard it %v after the waiter was granted", lostAt.Sub(at))
			}
			if attempt == 5 {
				t.Fatal("the holder's session was lost before the cut-off 5 times running")
			}
			t.Logf("attempt %d: the holder's session was lost before the cut-off (a late renewal); again", attempt)
			if _, err := waiter.Release(ctxT(t), ns); err != nil {
				t.Fatal(err)
			}
			continue
		}
		cutOff()
		lostAt = await(t, lost, 20*time.Second, "session loss never reported")
		wantErr(t, holder.Err(), baton.ErrSessionLost)
		return lostAt, await(t, granted, 20*time.Second, "the waiter was never granted")
	}
}

// lostTime reports the moment s is told it lost its session.
func lostTime(s *baton.Session) chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		<-s.Done()
		at <- time.Now()
	}()
	return at
}

// pendingOr waits until the session has a PENDING request (false), or
// until ch, the end of the lock call behind it, delivers first (true, with
// what it delivered).
func pendingOr[T any](t *testing.T, c *baton.Client, s *baton.Session, ch <-chan T) (T, bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case v := <-ch:
			return v, true
		default:
		}
		if pending(t, c, s) > 0 {
			var zero T
			return zero, false
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the session never had a PENDING request, nor did its lock call end")
	var zero T
	return zero, false
}

// TestOwnerHearsLostFirst: a holder that cannot renew its lease is told
// "lost" strictly before a waiter of another process is told "granted",
// round after round (the client's deadline ends before the database's).
func TestOwnerHearsLostFirst(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		opts := baton.Options{Lease: time.Second, PollInterval: 100 * time.Millisecond}
		// The waiter's client reaps as often as a client of the holder's
		// lease would (every 300 ms) but keeps its own session through a
		// loaded machine's late renewals: with the 1 s lease its session
		// was lost once under the full suite, and the waiter's Lock failed.
		other := openDSN(t, dsn, baton.Options{Lease: 10 * time.Second, Heartbeat: 300 * time.Millisecond, PollInterval: 100 * time.Millisecond})
		waiter := session(t, other)
		for round := 0; round < 5; round++ {
			cut := openDSN(t, dsn, opts)
			lostAt, grantedAt := loseToWaiter(t, cut, other, waiter, "lease", func() { baton.SwitchRenewals(cut, true) })
			if !lostAt.Before(grantedAt) {
				t.Fatalf("round %d: holder told lost at %v, %v after the waiter was granted", round, lostAt, lostAt.Sub(grantedAt))
			}
			if _, err := waiter.Release(ctxT(t), "lease"); err != nil {
				t.Fatal(err)
			}
			_ = cut.Close()
		}
	})
}

// TestOwnerHearsLostFirstSlowReplies: as TestOwnerHearsLostFirst, with
// the holder's replies from the database held 500 ms on the way back (a
// proxy; its requests arrive at once) for its last renewals before it
// stops renewing. The database stamps a renewal when it runs, about when
// it was sent; the holder hears of it half a second later (a second on
// MySQL/MariaDB, whose renewal is two statements). Counted from the
// renewal's start, minus the margin, the holder's deadline ends before
// the database could free its lock; counted from the reply, it would end
// after the waiter, whose client reaps every 100 ms, was granted the lock.
func TestOwnerHearsLostFirstSlowReplies(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := serverDSN(t, b, "no network between client and database")
		const (
			reply = 500 * time.Millisecond
			// A renewal ends well within a heartbeat, even one that
			// must open a connection through the slowed proxy (three
			// or four delayed replies) before its statements.
			heartbeat = 3 * time.Second
		)
		opts := baton.Options{Lease: 8 * time.Second, Heartbeat: heartbeat, PollInterval: 100 * time.Millisecond}
		other := openDSN(t, dsn, baton.Options{Lease: 10 * time.Second, Heartbeat: 100 * time.Millisecond, PollInterval: 100 * time.Millisecond})
		waiter := session(t, other)
		// Holding a lock, the waiter waits in the lock table at once
		// (not behind a turnstile): it is granted as soon as the
		// database frees the holder's lock.
		mustLock(t, waiter, "slow-other", baton.Write, "w")
		for round := 0; round < 2; round++ {
			pdsn, p := viaProxy(t, dsn)
			cut := openDSN(t, pdsn, opts)
			t.Cleanup(func() { p.DelayReplies(0) }) // before the client closes, should the test fail
			lostAt, grantedAt := loseToWaiter(t, cut, other, waiter, "slow", func() {
				// Renewals first run at full speed (the first one
				// opens the connection they use); then the replies
				// slow down, and once a renewal or two came back
				// late, renewals stop.
				time.Sleep(heartbeat + 200*time.Millisecond)
				p.DelayReplies(reply)
				time.Sleep(heartbeat + 2*reply + 300*time.Millisecond)
				baton.SwitchRenewals(cut, true)
			})
			if !lostAt.Before(grantedAt) {
				t.Fatalf("round %d: two holders: the holder heard it lost the lock %v after the waiter was granted", round, lostAt.Sub(grantedAt))
			}
			t.Logf("round %d: holder stopped %v before the waiter was granted", round, grantedAt.Sub(lostAt))
			if _, err := waiter.Release(ctxT(t), "slow"); err != nil {
				t.Fatal(err)
			}
			p.DelayReplies(0)
			_ = cut.Close()
		}
	})
}

// TestLostSessionNeverRevived: a session reported lost stays lost when its
// process reaches the database again before anyone reaped it: the client
// deletes it (its locks are freed) instead of renewing it.
func TestLostSessionNeverRevived(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		opts := baton.Options{Lease: time.Second}
		c := openDSN(t, dsn, opts)
		s := session(t, c)
		mustLock(t, s, "revive", baton.Write, "x")
		baton.SwitchRenewals(c, true)
		waitLost(t, s)
		baton.SwitchRenewals(c, false) // back before the database's lease ran out

		// The same client's new session gets the lock once the lost one is
		// deleted; the lost one is not in the monitoring view any more.
		s2 := session(t, c)
		if _, err := s2.Lock(ctxT(t), "revive", baton.Write, 10*time.Second, "x"); err != nil {
			t.Fatalf("lock of a lost session never freed: %v", err)
		}
		if rows := held(t, c, s); len(rows) != 0 {
			t.Fatalf("lost session still in the lock table: %+v", rows)
		}
		_, err := s.Lock(ctxT(t), "revive", baton.Write, 0, "y")
		wantErr(t, err, baton.ErrSessionLost)
		if n := baton.SessionsLost(c); n != 1 {
			t.Fatalf("SessionsLost = %d, want 1", n)
		}
	})
}

// TestLostWaiterLeavesNoRequest: a waiting Lock whose session is lost fails
// with ErrSessionLost and its request does not stay behind to be granted
// to nobody.
func TestLostWaiterLeavesNoRequest(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		// The holder's lease is long: a holder lost to a loaded machine's
		// late renewal (CI once did) would hand the lock to the waiter
		// before its own loss, which is what this test waits for.
		holderC := openDSN(t, dsn, baton.Options{Lease: 30 * time.Second})
		h := session(t, holderC)
		mustLock(t, h, "wait", baton.Write, "x")
		// The waiter's lease is short, so a loaded machine can lose its
		// session before its request is seen waiting (CI once did): the
		// call then ends with ErrSessionLost before the test switched the
		// renewals off, and the scenario is tried again with a new client.
		var (
			waiterC *baton.Client
			w       *baton.Session
			got     chan error
		)
		for attempt := 1; ; attempt++ {
			waiterC = openDSN(t, dsn, baton.Options{Lease: time.Second})
			w = session(t, waiterC)
			got = async(w, "wait", baton.Write, baton.Forever, "x")
			err, ended := pendingOr(t, holderC, w, got)
			if !ended {
				break
			}
			wantErr(t, err, baton.ErrSessionLost)
			if attempt == 5 {
				t.Fatal("the waiter's session was lost before its request was seen waiting, 5 times")
			}
		}
		baton.SwitchRenewals(waiterC, true)
		wantErr(t, recv(t, got), baton.ErrSessionLost)
		baton.SwitchRenewals(waiterC, false)
		// Once the waiter's client deleted it, releasing hands the lock to
		// nobody: a third session takes it at once.
		deadline := time.Now().Add(10 * time.Second)
		for len(held(t, holderC, w)) > 0 {
			if time.Now().After(deadline) {
				t.Fatal("the lost waiter's request was never deleted")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := h.Release(ctxT(t), "wait"); err != nil {
			t.Fatal(err)
		}
		third := session(t, holderC)
		mustLock(t, third, "wait", baton.Write, "x")
	})
}

// TestWorkerSurvivesLostSession: a worker whose session is lost stops
// handling, opens a new session when it can, and carries on; Work does not
// return.
func TestWorkerSurvivesLostSession(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		c := openDSN(t, dsn, baton.Options{Lease: time.Second, PollInterval: 100 * time.Millisecond})
		var mu sync.Mutex
		seen := map[string]int{}
		handled := make(chan string, 100)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- c.Work(ctx, "heal", func(ctx context.Context, m *baton.Message) error {
				mu.Lock()
				seen[string(m.Payload)]++
				mu.Unlock()
				handled <- string(m.Payload)
				return nil
			}, baton.WorkerOptions{Concurrency: 2})
		}()
		defer func() { cancel(); <-done }()
		wait := func(want ...string) {
			t.Helper()
			missing := map[string]bool{}
			for _, w := range want {
				missing[w] = true
			}
			for len(missing) > 0 {
				select {
				case p := <-handled:
					delete(missing, p)
				case err := <-done:
					t.Fatalf("Work returned: %v", err)
				case <-time.After(20 * time.Second):
					t.Fatalf("never handled: %v", missing)
				}
			}
		}
		if _, err := c.Enqueue(ctxT(t), "heal", []byte("before")); err != nil {
			t.Fatal(err)
		}
		wait("before")
		baton.SwitchRenewals(c, true)
		deadline := time.Now().Add(20 * time.Second)
		for baton.SessionsLost(c) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the worker's session was never lost")
			}
			time.Sleep(10 * time.Millisecond)
		}
		baton.SwitchRenewals(c, false)
		for _, p := range []string{"after1", "after2", "after3"} {
			if _, err := c.Enqueue(ctxT(t), "heal", []byte(p)); err != nil {
				t.Fatal(err)
			}
		}
		wait("after1", "after2", "after3")
		select {
		case err := <-done:
			t.Fatalf("Work returned: %v", err)
		default:
		}
	})
}

// TestPartitionedHolder: the network between a lock holder and its database
// goes silent (no packet either way, connections stay open, as in a real
// partition). The holder stops counting itself the holder strictly before
// a waiter in another client is granted the lock, round after round,
// judged by the timestamps of both critical sections; once the network
// heals, the partitioned client works again.
func TestPartitionedHolder(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := serverDSN(t, b, "no network between client and database")
		// A lease long enough that a busy two-core machine renews in
		// time: only the partition may lose the session.
		opts := baton.Options{Lease: 2 * time.Second, PollInterval: 100 * time.Millisecond}
		other := openDSN(t, dsn, opts)
		waiter := session(t, other)
		for round := 0; round < 5; round++ {
			pdsn, p := viaProxy(t, dsn)
			cut := openDSN(t, pdsn, opts)
			lostAt, grantedAt := loseToWaiter(t, cut, other, waiter, "part", p.Partition)
			if !lostAt.Before(grantedAt) {
				t.Fatalf("round %d: two holders: the partitioned holder heard it lost the lock %v after the waiter was granted", round, lostAt.Sub(grantedAt))
			}
			t.Logf("round %d: holder stopped %v before the waiter was granted", round, grantedAt.Sub(lostAt))
			p.Heal()
			batontest.Retry(t, time.Minute, "a new session after the partition healed", func() error {
				s, err := cut.NewSession(ctxT(t))
				if err == nil {
					_, err = s.Lock(ctxT(t), "part-after", baton.Write, 0, fmt.Sprint(round))
				}
				return err
			})
			if _, err := waiter.Release(ctxT(t), "part"); err != nil {
				t.Fatal(err)
			}
			_ = cut.Close()
		}
	})
}

// TestRenewalBesideOtherProcessWrites: on SQLite, a client keeps its
// session while another connection (as another process's would) holds
// the file's write lock nearly all the time: 300 ms transactions with 5 ms
// between them. The renewal cannot queue for such a writer:
//   - through SQLite's busy handler, whose sleeps grow to 100 ms, a
//     heartbeat had about ten tries, which mostly missed the gaps: the
//     session was lost in 5 runs of 5;
//   - trying every millisecond, it still lost the session in 6 runs of 8
//     with both cores busy with other work, and in 3 of 7 on an idle one:
//     a try cut off by the heartbeat's deadline made database/sql open the
//     connection anew, with a new connection's busy timeout, and every
//     renewal after it waited in the busy handler again;
//   - with each try run to its end (it fails at once), kept in 8 runs of 8
//     with both cores busy with other work.
//
// Against a writer that frees the lock for microseconds only (50-row
// transactions back to back, as this test first had) every connection of
// the file gets a try in about 300 through: with both cores busy the
// session was lost in 3 runs of 8 even so. No polling can promise more
// there; a lease longer than a second gives it more tries.
func TestRenewalBesideOtherProcessWrites(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Name != "sqlite" {
			// The server backends renew on a pooled connection of their
			// own, which no file lock holds.
			t.Skip("SQLite's write lock and busy handler only")
		}
		dsn := b.NewDSN(t)
		log := &messageLog{text: "lease renewal"}
		c := openDSN(t, dsn, baton.Options{Lease: time.Second, Heartbeat: 150 * time.Millisecond, Logger: slog.New(log)})
		s := session(t, c)
		raw := batontest.SQLDB(t, dsn)
		raw.SetMaxOpenConns(1)
		ctx := ctxT(t)
		if _, err := raw.ExecContext(ctx, "CREATE TABLE other_writer (n INTEGER)"); err != nil {
			t.Fatal(err)
		}
		until := time.Now().Add(3 * time.Second)
		writes := 0
		for time.Now().Before(until) {
			tx, err := raw.BeginTx(ctx, nil) // BEGIN IMMEDIATE
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO other_writer VALUES (?)", writes); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			writes++
			time.Sleep(5 * time.Millisecond)
		}
		// The session's loss is what the test rules out: a renewal may
		// fail while the writer holds the lock through a heartbeat, but
		// one of the gaps within a lease lets it in.
		if err := s.Err(); err != nil {
			t.Fatalf("the session beside another connection's %d write transactions: %v (failed renewals: %v)", writes, err, log.messages())
		}
		t.Logf("%d write transactions beside; failed renewals: %v", writes, log.messages())
	})
}
