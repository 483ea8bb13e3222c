package baton_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/mysql"
	"github.com/batonhq/baton/driver/postgres"
	"github.com/batonhq/baton/internal/batontest"
)

// Contended write locks wait behind a turnstile where the backend has
// them (in the server on PostgreSQL with a direct connection and on
// MySQL/MariaDB, in the process on SQLite: docs/architecture.md);
// elsewhere these tests run the table's paths. Either
// way: one holder at a time, tokens rising in grant order, every call
// answered.

// primeContention makes c's client see name as contended (its hint), so
// that its next write calls on it go through the turnstile: a holder, a
// refused try, a release.
func primeContention(t *testing.T, c *baton.Client, ns, name string) {
	t.Helper()
	a, b := session(t, c), session(t, c)
	mustLock(t, a, ns, baton.Write, name)
	mustRefuse(t, b, ns, baton.Write, name)
	release(t, a, ns)
	for _, s := range []*baton.Session{a, b} {
		if err := s.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLockTurnstileContention: sessions of two clients contend for one
// write lock in every way a call can wait: forever, with a timeout shorter
// than the turnstile's bound (the server's wait is cut to it), and trying
// once in a loop; readers come in between. Never two holders at once,
// never a reader beside a writer, tokens strictly rising.
func TestLockTurnstileContention(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		o := baton.Options{Lease: time.Minute}
		cs := []*baton.Client{openDSN(t, dsn, o), openDSN(t, dsn, o)}
		for _, c := range cs {
			primeContention(t, c, "ts", "x")
		}
		var mu sync.Mutex
		writers, readers, lastToken := 0, 0, int64(0)
		var fault error
		enter := func(m baton.Mode, g []baton.Grant) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case m == baton.Write && (writers > 0 || readers > 0), m == baton.Read && writers > 0:
				fault = errors.New("a writer beside another holder")
			case g[0].Token <= lastToken:
				fault = errors.New("a token that did not rise")
			}
			lastToken = g[0].Token
			if m == baton.Write {
				writers++
			} else {
				readers++
			}
		}
		leave := func(m baton.Mode) {
			mu.Lock()
			defer mu.Unlock()
			if m == baton.Write {
				writers--
			} else {
				readers--
			}
		}
		const rounds = 25
		batontest.Concurrently(t, 6, func(i int) error {
			s, err := cs[i%2].NewSession(context.Background())
			if err != nil {
				return err
			}
			defer s.Close(context.Background())
			for k := 0; k < rounds; k++ {
				m, timeout := baton.Write, baton.Forever
				switch i {
				case 1:
					timeout = 5 * time.Millisecond
				case 2:
					timeout = 0
				case 3:
					if k%3 == 0 {
						m = baton.Read
					}
				}
				g, err := s.Lock(context.Background(), "ts", m, timeout, "x")
				if errors.Is(err, baton.ErrTimeout) && timeout != baton.Forever {
					k-- // again, until it is granted
					time.Sleep(100 * time.Microsecond)
					continue
				}
				if err != nil {
					return err
				}
				enter(m, g)
				time.Sleep(100 * time.Microsecond)
				leave(m)
				if _, err := s.Release(context.Background(), "ts"); err != nil {
					return err
				}
			}
			return nil
		})
		if fault != nil {
			t.Fatal(fault)
		}
	})
}

// TestLockTurnstileReleaseNamespace (every backend): the release of a
// namespace by a session that got one of its names after waiting for it
// (behind a turnstile where the backend has them) and another at once
// releases both and lets the waited-for name go: another session takes
// both at once afterwards. (MySQL/MariaDB release the namespace and the
// turnstile in one call: {p}turnstile_release_ns.)
func TestLockTurnstileReleaseNamespace(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := open(t, b)
		primeContention(t, c, "tr", "x")
		holder, waiter, other := session(t, c), session(t, c), session(t, c)
		mustLock(t, holder, "tr", baton.Write, "x")
		got := make(chan error, 1)
		go func() {
			_, err := waiter.Lock(ctxT(t), "tr", baton.Write, 10*time.Second, "x")
			got <- err
		}()
		time.Sleep(50 * time.Millisecond) // queued, most often; granted either way
		release(t, holder, "tr")
		if err := <-got; err != nil {
			t.Fatalf("the waiter: %v", err)
		}
		mustLock(t, waiter, "tr", baton.Write, "y")
		if n, err := waiter.Release(ctxT(t), "tr"); n != 2 || err != nil {
			t.Fatalf("release of the namespace: %d, %v; want 2", n, err)
		}
		if h := held(t, c, waiter); len(h) != 0 {
			t.Fatalf("the waiter still holds %+v", h)
		}
		mustLock(t, other, "tr", baton.Write, "x", "y")
	})
}

// TestLockTurnstileWriterNotStarved (every backend): the turnstiles'
// qualification of first come, first served (docs/guarantees.md) and its
// bound. A writer waits behind the holder's turnstile, then a reader
// comes, which waits in the table. At the holder's release the reader
// may go first (the writer still behind the turnstile: the
// qualification), or the writer (its wait reached the table before the
// reader came). Either way, once the writer waits in the table a later
// reader waits behind it, is never granted beside it, and gets the lock
// after it.
func TestLockTurnstileWriterNotStarved(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := open(t, b)
		db := batontest.SQLDB(t, dsn)
		primeContention(t, c, "fair", "x")
		h, w, r1, r2 := session(t, c), session(t, c), session(t, c), session(t, c)
		mustLock(t, h, "fair", baton.Write, "x")
		wCh := waiting(t, c, w, "fair", baton.Write, 20*time.Second, "x")
		r1Ch := waiting(t, c, r1, "fair", baton.Read, 20*time.Second, "x")
		release(t, h, "fair")
		select {
		case err := <-r1Ch:
			if err != nil {
				t.Fatal(err)
			}
			// The reader went first. The writer, refused, waits in the
			// table: its request row is there.
			deadline := time.Now().Add(10 * time.Second)
			for lockRows(t, b, db, w) != 1 {
				if time.Now().After(deadline) {
					t.Fatal("the writer's wait never reached the lock table")
				}
				time.Sleep(5 * time.Millisecond)
			}
			stillWaiting(t, wCh, 0, "the writer")
			r2Ch := async(r2, "fair", baton.Read, 20*time.Second, "x")
			stillWaiting(t, r2Ch, 300*time.Millisecond, "a reader that came after the writer's wait reached the table")
			release(t, r1, "fair")
			mustRecv(t, wCh)
			stillWaiting(t, r2Ch, 100*time.Millisecond, "the later reader, beside the writer")
			release(t, w, "fair")
			mustRecv(t, r2Ch)
			t.Log("the reader that came second went first (the writer waited behind the turnstile)")
		case err := <-wCh:
			if err != nil {
				t.Fatal(err)
			}
			r2Ch := async(r2, "fair", baton.Read, 20*time.Second, "x")
			stillWaiting(t, r1Ch, 100*time.Millisecond, "the reader, beside the writer")
			stillWaiting(t, r2Ch, 100*time.Millisecond, "the later reader, beside the writer")
			release(t, w, "fair")
			mustRecv(t, r1Ch)
			release(t, r1, "fair")
			t.Log("the writer went first (its wait had reached the table)")
		case <-time.After(15 * time.Second):
			t.Fatal("neither waiter was granted after the release")
		}
	})
}

// TestLockTurnstileDeadlock: two sessions that each hold a lock taken
// through its turnstile and then wait for the other's close a cycle; the
// waits in the server are bounded, so the cycle reaches the table, where
// it is found and one call fails with ErrDeadlock; the other is granted
// once the victim lets go.
func TestLockTurnstileDeadlock(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := open(t, b)
		primeContention(t, c, "td", "a")
		primeContention(t, c, "td", "b")
		s1, s2 := session(t, c), session(t, c)
		if _, err := s1.Lock(ctxT(t), "td", baton.Write, baton.Forever, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := s2.Lock(ctxT(t), "td", baton.Write, baton.Forever, "b"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ch1 := async(s1, "td", baton.Write, baton.Forever, "b")
		ch2 := async(s2, "td", baton.Write, baton.Forever, "a")
		defer func() { t.Logf("deadlock reported after %v", time.Since(start)) }()
		var won *baton.Session
		var rest chan error
		select {
		case err := <-ch1:
			wantErr(t, err, baton.ErrDeadlock)
			won, rest = s2, ch2
			release(t, s1, "td")
		case err := <-ch2:
			wantErr(t, err, baton.ErrDeadlock)
			won, rest = s1, ch1
			release(t, s2, "td")
		case <-time.After(15 * time.Second):
			t.Fatal("the cycle was never reported")
		}
		mustRecv(t, rest)
		if h := held(t, c, won); len(h) != 2 {
			t.Fatalf("the survivor holds %+v, want a and b", h)
		}
	})
}

// TestLockTurnstileLineLost (PostgreSQL direct, MariaDB): the holder's
// turnstile goes with its connection, killed here; the lock does not. A
// contender then gets the turnstile but not the lock, which passes on
// only when the holder releases it, and the holder's release works
// without its line.
func TestLockTurnstileLineLost(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "postgres" && b.Label != "mysql" {
			t.Skip("a line to lose needs PostgreSQL on a direct connection, or MySQL/MariaDB; SQLite's turnstiles are in the process, with no connection")
		}
		c, dsn := open(t, b)
		primeContention(t, c, "tl", "x")
		holder, other := session(t, c), session(t, c)
		g1, err := holder.Lock(ctxT(t), "tl", baton.Write, baton.Forever, "x")
		if err != nil {
			t.Fatal(err)
		}
		if err := killTurnstile(t, b, dsn, "tl", "x"); err != nil {
			t.Fatalf("the holder's turnstile is not held in the server (%v): the lock was not taken through it", err)
		}
		_, err = other.Lock(ctxT(t), "tl", baton.Write, 300*time.Millisecond, "x")
		wantErr(t, err, baton.ErrTimeout)
		ch := async(other, "tl", baton.Write, 20*time.Second, "x")
		time.Sleep(50 * time.Millisecond)
		release(t, holder, "tl")
		mustRecv(t, ch)
		if hs := held(t, c, other); len(hs) != 1 || hs[0].Token <= g1[0].Token {
			t.Fatalf("the contender holds %+v after the holder's token %d", hs, g1[0].Token)
		}
	})
}

// waitRows counts the session's listings of waits behind a turnstile
// (lock_waits).
func waitRows(t *testing.T, b batontest.Backend, db *sql.DB, s *baton.Session) int {
	t.Helper()
	return sessionRows(t, b, db, "baton_lock_waits", s)
}

// killTurnstile ends the server session that holds the turnstile of a
// service lock (the default prefix's): found by its keys in pg_locks, or
// by its name through IS_USED_LOCK.
func killTurnstile(t *testing.T, b batontest.Backend, dsn, ns, name string) error {
	db, err := batontest.OpenSQL(dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	id := driver.Ident{Kind: driver.KindService, NS: ns, Name: name}
	if b.Label == "postgres" {
		var killed bool
		err := db.QueryRowContext(ctxT(t), `SELECT pg_terminate_backend(pid) FROM pg_locks
			WHERE locktype = 'advisory' AND objsubid = 2 AND granted AND classid::bigint = $1 AND objid::bigint = $2`,
			int64(uint32(postgres.TurnstileClass)), int64(uint32(postgres.TurnstileKey("baton_", id)))).Scan(&killed)
		if err == nil && !killed {
			err = errors.New("not terminated")
		}
		return err
	}
	var dbName string
	if err := db.QueryRowContext(ctxT(t), "SELECT DATABASE()").Scan(&dbName); err != nil {
		return err
	}
	var conn sql.NullInt64
	if err := db.QueryRowContext(ctxT(t), "SELECT IS_USED_LOCK(?)", mysql.TurnstileName(dbName, "baton_", id)).Scan(&conn); err != nil {
		return err
	}
	if !conn.Valid {
		return errors.New("nobody holds it")
	}
	_, err = db.ExecContext(ctxT(t), fmt.Sprintf("KILL %d", conn.Int64))
	return err
}

// TestLockTurnstileWaitsOn (PostgreSQL direct, MariaDB, SQLite in one
// process): a contender that
// holds nothing else waits behind the turnstile past its first bound
// without joining the table (no cycle can pass through its wait): shown
// as PENDING by monitoring, yet nothing of it is in the lock state, for
// up to a second, then it joins the table; it gets the
// lock when the holder releases, and nothing of its wait is left. One
// that times out leaves nothing either. One that holds another lock
// joins the table after the bound: its wait may close a cycle, which only
// the table's detector sees.
func TestLockTurnstileWaitsOn(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "postgres" && b.Label != "mysql" && b.Label != "sqlite" {
			t.Skip("turnstiles need PostgreSQL on a direct connection")
		}
		c, dsn := open(t, b)
		db := batontest.SQLDB(t, dsn)
		rows := func(s *baton.Session) int { t.Helper(); return lockRows(t, b, db, s) }
		pending := func(s *baton.Session) bool {
			for _, l := range held(t, c, s) {
				if l.Status == "PENDING" {
					return true
				}
			}
			return false
		}
		primeContention(t, c, "wo", "x")
		holder, waiter := session(t, c), session(t, c)
		mustLock(t, holder, "wo", baton.Write, "x")
		// The waiter may stay behind the turnstile until the test has
		// looked, however slow the machine: its bound is lifted for the
		// check, then restored to the default second.
		baton.SetTurnstileOn(c, time.Hour)
		ch := async(waiter, "wo", baton.Write, 20*time.Second, "x")
		deadline := time.Now().Add(10 * time.Second)
		for !pending(waiter) {
			if time.Now().After(deadline) {
				t.Fatal("the waiter behind the turnstile never showed as PENDING")
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(250 * time.Millisecond) // past the first bound and two slices
		if n, p := rows(waiter), pending(waiter); n != 0 || !p {
			t.Fatalf("the waiter holding nothing has %d request rows (pending %v), want none and PENDING", n, p)
		}
		// Past the bound (a second in all by default) it joins the table
		// (a turnstile held by mistake costs no more than that).
		baton.SetTurnstileOn(c, 0)
		for rows(waiter) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the waiter never joined the table after a second behind the turnstile")
			}
			time.Sleep(20 * time.Millisecond)
		}
		release(t, holder, "wo")
		mustRecv(t, ch)
		if pending(waiter) {
			t.Fatal("the granted waiter is still listed as PENDING")
		}
		release(t, waiter, "wo")
		// The granted wait's listing is deleted after the call returned,
		// and before its release: none is left to show once the instance
		// that hides it is gone.
		if n := waitRows(t, b, db, waiter); n != 0 {
			t.Fatalf("%d listings of the granted wait left after its release", n)
		}

		// A timeout ends the wait and its listing.
		mustLock(t, holder, "wo", baton.Write, "x")
		_, err := waiter.Lock(ctxT(t), "wo", baton.Write, 150*time.Millisecond, "x")
		wantErr(t, err, baton.ErrTimeout)
		if p, n := pending(waiter), rows(waiter); p || n != 0 {
			t.Fatalf("a timed-out wait behind the turnstile left something behind: PENDING %v, %d request rows", p, n)
		}

		// One holding another lock joins the table after the bound.
		mustLock(t, waiter, "wo", baton.Write, "other")
		ch = async(waiter, "wo", baton.Write, 20*time.Second, "x")
		deadline = time.Now().Add(10 * time.Second)
		for rows(waiter) < 2 { // "other", and the waiting request for x
			if time.Now().After(deadline) {
				t.Fatal("the waiter holding another lock never joined the table")
			}
			time.Sleep(5 * time.Millisecond)
		}
		release(t, holder, "wo")
		mustRecv(t, ch)
	})
}

// contendRounds is how many times each of contendInto's sessions takes
// the lock.
const contendRounds = 60

// contendInto runs three sessions of one client on dsn that each take
// the write lock "x" contendRounds times (waiting as long as it takes),
// and append "in" and then "out" lines naming themselves to file while
// they hold it. They begin once ready, called with the sessions open,
// returns.
func contendInto(ctx context.Context, dsn, file, who string, ready func() error) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := baton.Open(ctx, dsn, baton.Options{Lease: time.Minute})
	if err != nil {
		return err
	}
	defer c.Close()
	ss := make([]*baton.Session, 3)
	for i := range ss {
		if ss[i], err = c.NewSession(ctx); err != nil {
			return err
		}
		defer ss[i].Close(context.Background())
	}
	if err := ready(); err != nil {
		return err
	}
	errs := make(chan error, len(ss))
	for i, s := range ss {
		go func() {
			errs <- func() error {
				me := fmt.Sprintf("%s-%d", who, i)
				for range contendRounds {
					if _, err := s.Lock(ctx, "tp", baton.Write, baton.Forever, "x"); err != nil {
						return err
					}
					// One write each: appends of a line are atomic.
					if _, err := f.WriteString("in " + me + "\n"); err != nil {
						return err
					}
					time.Sleep(50 * time.Microsecond)
					if _, err := f.WriteString("out " + me + "\n"); err != nil {
						return err
					}
					if _, err := s.Release(ctx, "tp"); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	var all []error
	for range ss {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// TestLockTurnstileTwoProcesses: sessions of two processes contend for
// one write lock; on SQLite those of one process wait behind its
// turnstile in the process, those of the other in the lock table (and
// behind their own process's turnstile). Each holder writes "in" and
// "out" lines to one file while it holds the lock: the lines alternate,
// each "out" of the holder whose "in" came before it, every round of
// both processes is there, and the lock passed between the processes.
func TestLockTurnstileTwoProcesses(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b) // migrated
		file := filepath.Join(t.TempDir(), "holders")
		child, out := startChild(t, "contend", dsn, "BATON_TEST_FILE="+file)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err := contendInto(ctx, dsn, file, "parent", func() error {
			line, err := out.ReadString('\n')
			if strings.TrimSpace(line) != "ready" {
				return fmt.Errorf("the child said %q (%v)", line, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := child.Wait(); err != nil {
			said, _ := io.ReadAll(out)
			t.Fatalf("child: %v: %s", err, said)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if want := 2 * 2 * 3 * contendRounds; len(lines) != want {
			t.Fatalf("%d lines, want %d", len(lines), want)
		}
		passed, last := 0, ""
		for i := 0; i < len(lines); i += 2 {
			in, out := strings.TrimPrefix(lines[i], "in "), strings.TrimPrefix(lines[i+1], "out ")
			if in == lines[i] || out == lines[i+1] || in != out {
				t.Fatalf("line %d: %q then %q: two holders of one write lock", i+1, lines[i], lines[i+1])
			}
			if proc, _, _ := strings.Cut(in, "-"); proc != last {
				passed, last = passed+1, proc
			}
		}
		t.Logf("the lock passed between the processes %d times", passed-1)
		if passed < 3 {
			t.Fatalf("the lock passed between the processes %d times: they did not contend", passed-1)
		}
	})
}
