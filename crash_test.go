package baton_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/batontest"
)

// TestMain lets the test binary act as a child process that holds locks
// until it is killed.
func TestMain(m *testing.M) {
	switch os.Getenv("BATON_TEST_CHILD") {
	case "hold":
		holdForever(os.Getenv("BATON_TEST_DSN"))
		return
	case "worker":
		childWorker(os.Getenv("BATON_TEST_DSN"), os.Getenv("BATON_TEST_QUEUE"), os.Getenv("BATON_TEST_MODE"), os.Getenv("BATON_TEST_FILE"))
		return
	case "unique":
		childUnique(os.Getenv("BATON_TEST_DSN"), os.Getenv("BATON_TEST_SEED"))
		return
	case "schedule":
		childSchedule(os.Getenv("BATON_TEST_DSN"))
		return
	case "completetx":
		childCompleteTx(os.Getenv("BATON_TEST_DSN"))
		return
	case "txhold":
		childTxHold(os.Getenv("BATON_TEST_DSN"))
		return
	case "contend":
		childMust(contendInto(context.Background(), os.Getenv("BATON_TEST_DSN"), os.Getenv("BATON_TEST_FILE"), "child",
			func() error { fmt.Println("ready"); return nil }))
		return
	}
	os.Exit(m.Run())
}

// childMust ends a child process (see TestMain) that err stopped, saying
// so on its standard output, which the test reads.
func childMust(err error) {
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

// childReady tells the test that the child is ready (say: "locked",
// "ready", "claimed ID") and waits to be killed.
func childReady(say string) {
	fmt.Println(say)
	select {}
}

func holdForever(dsn string) {
	ctx := context.Background()
	if h := os.Getenv("BATON_TEST_HOSTID"); h != "" {
		baton.SetHostIdentity(h)
	}
	c, err := baton.Open(ctx, dsn)
	childMust(err)
	s, err := c.NewSession(ctx)
	if err == nil {
		_, err = s.Lock(ctx, "crash", baton.Write, 0, "x", "y")
	}
	if err == nil {
		_, err = s.GetLock(ctx, "crash.user", 0)
	}
	childMust(err)
	if name := os.Getenv("BATON_TEST_WAITFOR"); name != "" {
		// A waiting request too (on a lock the parent holds), and a
		// claimed message.
		go func() { _, _ = s.Lock(ctx, "crash", baton.Write, baton.Forever, name) }()
		_, err := c.Enqueue(ctx, "crashq", []byte("m"))
		if err == nil {
			_, err = s.Claim(ctx, "crashq", baton.ClaimOptions{})
		}
		childMust(err)
	}
	childReady("locked")
}

// TestKilledHolderFreesLocks: a process holding locks is killed with
// SIGKILL; with default settings its locks pass to a waiter within seconds,
// and never while the holder is alive. On the same host the dead PID is
// noticed at the next heartbeat; from another host the lease runs out.
func TestKilledHolderFreesLocks(t *testing.T) {
	for _, where := range []string{"same-host", "other-host"} {
		t.Run(where, func(t *testing.T) { killedHolder(t, where == "other-host") })
	}
}

// startChild starts this test binary as a child process that plays
// BATON_TEST_CHILD=kind (see TestMain) on dsn, with env added to its
// environment; the child is killed when the test ends. It returns the
// child and its standard output.
func startChild(t *testing.T, kind, dsn string, env ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(append(os.Environ(), "BATON_TEST_CHILD="+kind, "BATON_TEST_DSN="+dsn), env...)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	return child, bufio.NewReader(out)
}

// startChildSaying is startChild returning once the child's first line
// says want ("locked" for a holder, "ready" for a worker).
func startChildSaying(t *testing.T, want, kind, dsn string, env ...string) *exec.Cmd {
	t.Helper()
	child, out := startChild(t, kind, dsn, env...)
	if line, _ := out.ReadString('\n'); strings.TrimSpace(line) != want {
		t.Fatalf("child said %q", line)
	}
	return child
}

func killedHolder(t *testing.T, remote bool) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := open(t, b)
		var env []string
		if remote {
			env = append(env, "BATON_TEST_HOSTID=another-host")
		}
		child := startChildSaying(t, "locked", "hold", dsn, env...)
		s := session(t, c)
		mustRefuse(t, s, "crash", baton.Write, "y")
		if ok, err := s.GetLock(ctxT(t), "CRASH.USER", 0); ok || err != nil {
			t.Fatalf("user lock while its holder lives: granted %v, %v (want not granted, no error)", ok, err)
		}
		waiting := waiting(t, c, s, "crash", baton.Write, baton.Forever, "x", "y")
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		_ = child.Wait() // reaped, as a supervisor or shell would
		if err := await(t, waiting, 20*time.Second, "locks of the killed holder were not freed"); err != nil {
			t.Fatal(err)
		}
		t.Logf("locks passed on %v after SIGKILL", time.Since(killed))
		if ok, err := s.GetLock(ctxT(t), "crash.user", baton.Forever); !ok {
			t.Fatalf("user lock of the killed holder: %v", err)
		}
	})
}

// serverDSN is for tests of the network between client and server: it
// skips the test on SQLite (embedded: why there is nothing to test) and
// returns the DSN of a fresh database with a client on it.
func serverDSN(t *testing.T, b batontest.Backend, why string) string {
	t.Helper()
	if b.Name == "sqlite" {
		t.Skip("embedded: " + why)
	}
	_, dsn := open(t, b)
	return dsn
}

// viaProxy returns dsn through a proxy of its own, which the test can cut.
func viaProxy(t *testing.T, dsn string) (string, *batontest.Proxy) {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := batontest.NewProxy(t, u.Host)
	u.Host = p.Addr()
	return u.String(), p
}

// TestNetworkLoss: a client cut off from its database longer than the lease
// reports its session lost, and another client gets the lock once the lease
// has run out; never both at once. A short outage is survived.
func TestNetworkLoss(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := serverDSN(t, b, "no network between client and database (see TestSessionLostWhenReaped)")
		pdsn, p := viaProxy(t, dsn)
		opts := baton.Options{Lease: time.Second, PollInterval: 200 * time.Millisecond}
		cut := openDSN(t, pdsn, opts)
		// The other client's own lease is not under test: a long one, so
		// that a loaded machine cannot lose its session (with a 1 s lease a
		// renewal stalled by the shared server for 0.7 s did, once).
		other := openDSN(t, dsn, baton.Options{Lease: time.Minute, PollInterval: 200 * time.Millisecond})
		s1 := session(t, cut)
		s2 := session(t, other)
		mustLock(t, s1, "net", baton.Write, "x")

		// A blip shorter than the lease is survived.
		p.Cut(false)
		time.Sleep(300 * time.Millisecond)
		select {
		case <-s1.Done():
			t.Fatalf("session lost after a short blip: %v", s1.Err())
		default:
		}
		mustRefuse(t, s2, "net", baton.Write, "x")

		// A long outage loses the session; the lock then passes on.
		p.Cut(true)
		got := async(s2, "net", baton.Write, baton.Forever, "x")
		await(t, s1.Done(), 15*time.Second, "session loss never reported")
		wantErr(t, s1.Err(), baton.ErrSessionLost)
		mustRecv(t, got)
		p.Restore()
		_, err := s1.Lock(ctxT(t), "net", baton.Write, 0, "z")
		wantErr(t, err, baton.ErrSessionLost)
		// The client itself recovers: new sessions work once the network is back.
		deadline := time.Now().Add(15 * time.Second)
		for {
			s3, err := cut.NewSession(ctxT(t))
			if err == nil {
				_, err = s3.Lock(ctxT(t), "net", baton.Write, 0, "z")
			}
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("client did not recover: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// TestSessionLostWhenReaped: a session whose lease ran out and that another
// process reaped is reported lost to its owner, with ErrSessionLost.
func TestSessionLostWhenReaped(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		c := openDSN(t, dsn, baton.Options{Lease: time.Second})
		s := session(t, c)
		mustLock(t, s, "ns", baton.Write, "x")
		batontest.ReapSession(t, dsn, s.ID())
		await(t, s.Done(), 10*time.Second, "loss not reported")
		if !errors.Is(s.Err(), baton.ErrSessionLost) {
			t.Fatalf("Err() = %v", s.Err())
		}
	})
}

// TestOrphanedRequestSwept: a granted request whose session no longer exists
// (a stalled session's statement that landed after it was reaped) is
// removed, and the lock passes to a waiter.
func TestOrphanedRequestSwept(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		// A short lease for a sweep soon (every 10 heartbeats), not so
		// short that a busy machine loses the session first.
		c := openDSN(t, dsn, baton.Options{Lease: 2 * time.Second})
		ctx := ctxT(t)
		batontest.DriverTx(t, batontest.Driver(t, dsn), func(ctx context.Context, tx driver.Tx) error {
			id := driver.Ident{Kind: driver.KindService, NS: "orphan", Name: "x"}
			st, err := tx.LockIdentLock(ctx, []driver.Ident{id})
			if err == nil {
				_, err = tx.LockRequestInsert(ctx, driver.Request{SessionID: "ghost", ClientID: "ghost", Ident: id,
					Mode: driver.ModeWrite, Status: driver.StatusGranted, Token: st[0].Fence + 1})
			}
			if err == nil {
				st[0].Fence, st[0].Writers = st[0].Fence+1, 1
				err = tx.LockIdentUpdate(ctx, st[0])
			}
			return err
		})
		s := session(t, c)
		_, err := s.Lock(ctx, "orphan", baton.Write, 0, "x")
		wantErr(t, err, baton.ErrTimeout)
		if _, err := s.Lock(ctx, "orphan", baton.Write, 20*time.Second, "x"); err != nil {
			t.Fatalf("orphan never swept: %v", err)
		}
	})
}

// TestReaperLeavesNothing: one reaper pass over a SIGKILLed process's
// session (same host: its PID is gone) deletes the session, every lock
// request of it, granted or waiting, and hands its claimed message back, at
// once: checked in the tables, not by waiting for a later sweep.
func TestReaperLeavesNothing(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := open(t, b)
		// A lease long enough that nothing expires during the test and
		// no background pass does the reaper's work.
		reaper := openDSN(t, dsn, baton.Options{Lease: time.Hour})
		parent := session(t, c)
		mustLock(t, parent, "crash", baton.Write, "z")
		child := startChildSaying(t, "locked", "hold", dsn, "BATON_TEST_WAITFOR=z")
		db := batontest.SQLDB(t, dsn)
		// Every backend keeps a free lock's first holder outside the
		// request rows (PostgreSQL and SQLite in the lock's own row,
		// MySQL in a MEMORY table); the view shows every request.
		ph := "?"
		if b.Name == "postgres" {
			ph = "$1"
		}
		var dead string
		if err := db.QueryRowContext(ctxT(t), "SELECT id FROM baton_sessions WHERE pid = "+ph, child.Process.Pid).Scan(&dead); err != nil {
			t.Fatal(err)
		}
		count := func(q string) int {
			t.Helper()
			var n int
			if err := db.QueryRowContext(ctxT(t), strings.ReplaceAll(q, "?", ph), dead).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		deadline := time.Now().Add(10 * time.Second)
		for count("SELECT COUNT(*) FROM baton_lock_holds WHERE session_id = ? AND status <> 'G'") != 1 {
			if time.Now().After(deadline) {
				t.Fatal("the child's waiting request never appeared")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if n := count("SELECT COUNT(*) FROM baton_lock_holds WHERE session_id = ?"); n != 4 { // x, y, the user lock, z waiting
			t.Fatalf("the child has %d lock requests, want 4", n)
		}
		if n := count("SELECT COUNT(*) FROM baton_messages WHERE claimed_by = ?"); n != 1 {
			t.Fatalf("the child claims %d messages, want 1", n)
		}
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = child.Wait()
		n, err := baton.ReapOnce(ctxT(t), reaper)
		if err != nil || n != 1 {
			t.Fatalf("one reaper pass ended %d sessions (%v), want 1", n, err)
		}
		for q, what := range map[string]string{
			"SELECT COUNT(*) FROM baton_sessions WHERE id = ?":           "session",
			"SELECT COUNT(*) FROM baton_lock_holds WHERE session_id = ?": "lock requests",
			"SELECT COUNT(*) FROM baton_messages WHERE claimed_by = ?":   "claimed messages",
		} {
			if n := count(q); n != 0 {
				t.Errorf("after one reaper pass the dead session still has %d %s", n, what)
			}
		}
		if st := stats(t, c, "crashq"); st.Ready != 1 || st.Claimed != 0 {
			t.Fatalf("the dead session's message was not handed back: %+v", st)
		}
		s := session(t, c)
		mustLock(t, s, "crash", baton.Write, "x", "y")
	})
}

// TestLockCallConnectionCut (PostgreSQL, PgBouncer, MariaDB): a lock call
// whose connection is cut while its statement waits in the server (here
// for the identifier's row, which a transaction of the test's own holds)
// returns the lock once or fails, and leaves nothing else behind once the
// server has run what it was sent: a holder or a request written after
// the call gave up (or tried again) would be a lock that nobody knows it
// holds, or a wait that nobody waits for. Once with the
// lock free (the uncontended path), once held by another session (the
// request that waits).
func TestLockCallConnectionCut(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := serverDSN(t, b, "no network between client and database")
		pdsn, p := viaProxy(t, dsn)
		opts := baton.Options{Lease: time.Minute}
		cut := openDSN(t, pdsn, opts)
		other := openDSN(t, dsn, opts)
		db := batontest.SQLDB(t, dsn)
		for _, contended := range []bool{false, true} {
			if !contended && b.Name == "mysql" {
				// The uncontended path writes a MEMORY table, whose lock
				// is the table's: whatever withdraws the call waits for
				// the statement the cut left in the server.
				continue
			}
			name := fmt.Sprintf("x%v", contended)
			caller, holder, third := session(t, cut), session(t, other), session(t, other)
			// The identifier's row exists.
			mustLock(t, holder, "cc", baton.Write, name)
			if contended {
				// A session that holds a lock waits in the lock table
				// after a short while in the turnstile.
				mustLock(t, caller, "cc-other", baton.Write, "other")
				// A wait through the lock table (its session holds
				// another lock) that times out: MySQL's lock state has
				// the identifier's InnoDB row from the first such wait on
				// it (a refused try stores nothing).
				mustLock(t, third, "cc-third", baton.Write, "t")
				_, err := third.Lock(ctxT(t), "cc", baton.Write, 100*time.Millisecond, name)
				wantErr(t, err, baton.ErrTimeout)
				release(t, third, "cc-third")
			} else {
				release(t, holder, "cc")
			}
			tx, waiting := holdLockRow(t, b, db, name)
			got := async(caller, "cc", baton.Write, 10*time.Second, name)
			deadline := time.Now().Add(10 * time.Second)
			for !waiting() {
				select {
				case err := <-got:
					t.Fatalf("contended %v: the call ended before its statement waited for the row: %v", contended, err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("contended %v: the call's statement never waited for the row", contended)
				}
				time.Sleep(5 * time.Millisecond)
			}
			p.Cut(false)
			// Time for the client to see the cut (and perhaps try again on
			// a new connection) while the row is still held.
			time.Sleep(200 * time.Millisecond)
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if contended {
				release(t, holder, "cc")
			}
			err := recv(t, got)
			// Time for what the server was sent to end there.
			time.Sleep(300 * time.Millisecond)
			if contended {
				releaseAfterCut(t, caller, "cc-other")
			}
			want := 0
			if err == nil {
				want = 1
			}
			if n := lockRows(t, b, db, caller); n != want {
				t.Fatalf("contended %v: the call returned %v, and its session has %d instances in the lock state", contended, err, n)
			}
			if err == nil {
				releaseAfterCut(t, caller, "cc")
			}
			if _, lerr := third.Lock(ctxT(t), "cc", baton.Write, 2*time.Second, name); lerr != nil {
				t.Fatalf("contended %v: after the cut call returned %v, another session could not take the lock: %v", contended, err, lerr)
			}
			t.Logf("contended %v: %v", contended, err)
			release(t, third, "cc")
		}
	})
}

// releaseAfterCut releases a namespace of a session whose client's
// connections a proxy cut: the first statement on each connection the
// pool kept idle fails ("unexpected EOF"; the server never saw it), so the
// release is tried again, at most three times, while it fails so.
func releaseAfterCut(t *testing.T, s *baton.Session, ns string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		_, err := s.Release(ctxT(t), ns)
		if err == nil {
			return
		}
		if attempt == 3 || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("release %s after the cut: %v", ns, err)
		}
	}
}

// holdLockRow locks the lock state's row of the identifier (namespace
// "cc") in a transaction of the test's own, and returns it with a check
// that another transaction waits for that row.
func holdLockRow(t *testing.T, b batontest.Backend, db *sql.DB, name string) (*sql.Tx, func() bool) {
	t.Helper()
	tx, err := db.BeginTx(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	lock := "SELECT 1 FROM baton_lock_idents WHERE ns = 'cc' AND name = $1 FOR UPDATE"
	self := "SELECT pg_backend_pid()"
	waits := "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)))"
	if b.Name == "mysql" {
		// The identifier's mutex row (its lock state is
		// in MEMORY tables, which have no row locks).
		lock = "SELECT 1 FROM baton_lock_mutex WHERE ns = 'cc' AND name = ? FOR UPDATE"
		self = "SELECT CONNECTION_ID()"
		// A statement of the lock state's in the server while the row is
		// held waits for it (MariaDB's lock-wait tables do not list a
		// wait in the optimizer's row lookup).
		waits = `SELECT EXISTS (SELECT 1 FROM information_schema.PROCESSLIST
			WHERE DB = DATABASE() AND ID <> ? AND INFO LIKE '%baton\_lock\_mutex%')`
	}
	var n, id int64
	if err := tx.QueryRowContext(ctxT(t), lock, name).Scan(&n); err != nil {
		t.Fatalf("lock the row of %q: %v", name, err)
	}
	if err := tx.QueryRowContext(ctxT(t), self).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return tx, func() bool {
		var w bool
		if err := db.QueryRowContext(ctxT(t), waits, id).Scan(&w); err != nil {
			t.Fatal(err)
		}
		return w
	}
}
