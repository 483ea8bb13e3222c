package baton_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// needServerPrograms fails the test when a database server's programs are
// missing in CI (CI=true: a missing server is a failure there, never a
// pass) and skips it, saying why, elsewhere.
func needServerPrograms(t *testing.T, what string, ok bool) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts private database servers")
	}
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not found (CI=%s: install them; the failover test does not skip in CI)", what, os.Getenv("CI"))
	}
	t.Skipf("%s not found: install them to run the failover test (it fails instead of skipping when CI is set)", what)
}

// postmasterPID reads the PID of the postmaster running on a data directory.
func postmasterPID(t *testing.T, data string) int {
	pidText, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pidText), "\n", 2)[0]))
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	return pid
}

// pgPair is a private PostgreSQL primary with a synchronous streaming
// standby, each with its own data directory and port; both are killed (by
// the PIDs they had) and removed when the test ends.
type pgPair struct {
	primary, standby *privatePG
}

func startPGPair(t *testing.T) *pgPair {
	bin, ok := pgBin()
	needServerPrograms(t, "PostgreSQL server programs (/usr/lib/postgresql/*/bin)", ok)
	dir, err := os.MkdirTemp("", "baton-failover-pg-")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	t.Cleanup(func() {
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				killTree(t, pid)
			}
		}
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		// The servers run as postgres (PostgreSQL refuses root).
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root and there is no postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	run := func(what string, cmd *exec.Cmd) {
		t.Helper()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", what, err, out)
		}
	}
	// Every commit waits until the standby has flushed it (synchronous
	// replication); only the primary's command line says so, so the
	// promoted standby commits on its own.
	p := &privatePG{t: t, bin: bin, dir: filepath.Join(dir, "primary"), port: freePort(t),
		extra: "-c synchronous_standby_names=* -c synchronous_commit=on -c wal_level=replica -c max_wal_senders=4"}
	s := &privatePG{t: t, bin: bin, dir: filepath.Join(dir, "standby"), port: freePort(t)}
	for _, d := range []string{p.dir, s.dir} {
		run("mkdir", asPostgres("mkdir", "-m", "0700", d))
	}
	run("initdb", asPostgres(filepath.Join(bin, "initdb"), "-D", filepath.Join(p.dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync"))
	p.start()
	pids = append(pids, postmasterPID(t, filepath.Join(p.dir, "data")))
	run("pg_basebackup", asPostgres(filepath.Join(bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(p.port), "-U", "postgres",
		"-D", filepath.Join(s.dir, "data"), "-R", "-X", "stream", "-c", "fast", "--no-sync"))
	s.start()
	pids = append(pids, postmasterPID(t, filepath.Join(s.dir, "data")))
	db, err := sql.Open("pgx", p.dsn())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The standby is streaming and synchronous before anything is written.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state string
		err := db.QueryRow("SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'").Scan(&state)
		if err == nil && state == "sync" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby is not a streaming synchronous standby after 30 s: %q %v", state, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := db.Exec("CREATE DATABASE test"); err != nil {
		t.Fatal(err)
	}
	return &pgPair{primary: p, standby: s}
}

// dsn names both servers; pgx connects to the first that accepts writes.
func (pp *pgPair) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/test?target_session_attrs=read-write",
		pp.primary.port, pp.standby.port)
}

// failover kills every process of the primary with SIGKILL and promotes
// the standby.
func (pp *pgPair) failover(t *testing.T) {
	pp.primary.stop("kill9")
	s := pp.standby
	if out, err := asPostgres(filepath.Join(s.bin, "pg_ctl"), "-D", filepath.Join(s.dir, "data"), "-w", "-t", "30", "promote").CombinedOutput(); err != nil {
		t.Fatalf("promote the standby: %v: %s", err, out)
	}
}

// failoverUnderLoad runs baton on dsn while failover (which kills the
// primary and promotes its replica) happens mid-load: an enqueuer pushes
// messages, two workers handle them, a listener listens, a session holds a
// write lock and another client waits for it. It checks that every
// acknowledged enqueue is handled, that the workers and the listener carry
// on, and that the lock is never granted while the holder from before
// still counts itself its holder: it heard it lost its session first
// (holderMustLose), or it still held the lock on the promoted server and
// released it.
func failoverUnderLoad(t *testing.T, dsn string, failover func(), holderMustLose bool) {
	const lease = 2 * time.Second
	opts := baton.Options{Lease: lease, PollInterval: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prod, holderC, lockerC, listenC := openDSN(t, dsn, opts), openDSN(t, dsn, opts), openDSN(t, dsn, opts), openDSN(t, dsn, opts)

	var mu sync.Mutex
	acked := map[string]bool{}
	handled := map[string]int{}
	workDone := make(chan error, 2)
	for w := 0; w < 2; w++ {
		wc := openDSN(t, dsn, opts)
		go func() {
			workDone <- wc.Work(ctx, "fo", func(ctx context.Context, m *baton.Message) error {
				mu.Lock()
				handled[string(m.Payload)]++
				mu.Unlock()
				return nil
			}, baton.WorkerOptions{Concurrency: 2})
		}()
	}
	workersAlive := func() {
		t.Helper()
		select {
		case err := <-workDone:
			t.Fatalf("a worker stopped: %v", err)
		default:
		}
	}
	l, err := listenC.Listen(ctxT(t), "fo")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// heard sends payload until the listener hears it.
	heard := func(payload string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			nctx, ncancel := context.WithTimeout(ctx, 2*time.Second)
			_ = prod.Notify(nctx, "fo", payload)
			ncancel()
			select {
			case n, ok := <-l.C():
				if !ok {
					t.Fatal("the listener's channel was closed")
				}
				if n.Payload == payload {
					return
				}
			case <-time.After(200 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("the listener did not hear %q within 20 s", payload)
			}
		}
	}
	heard("before")

	holder := session(t, holderC)
	hg := mustLock(t, holder, "fo", baton.Write, "x")
	var released sync.Once
	releasedC := make(chan struct{})
	// The waiting locker: a new session whenever its own is lost. At its
	// grant, the holder has heard it lost its session or has released.
	type grant struct {
		at         time.Time
		token      int64
		holderKnew bool
		lost       int
	}
	granted := make(chan grant, 1)
	go func() {
		lost := 0
		for ctx.Err() == nil {
			s, err := lockerC.NewSession(ctx)
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			g, err := s.Lock(ctx, "fo", baton.Write, baton.Forever, "x")
			if err != nil {
				lost++
				continue
			}
			r := grant{at: time.Now(), token: g[0].Token, lost: lost}
			select {
			case <-holder.Done():
				r.holderKnew = true
			case <-releasedC:
				r.holderKnew = true
			default:
			}
			granted <- r
			return
		}
	}()

	stopEnq, enqDone := make(chan struct{}), make(chan struct{})
	refused := 0
	go func() {
		defer close(enqDone)
		for i := 0; ; i++ {
			select {
			case <-stopEnq:
				return
			default:
			}
			p := fmt.Sprint("m", i)
			ectx, ecancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := prod.Enqueue(ectx, "fo", []byte(p))
			ecancel()
			mu.Lock()
			if err == nil {
				acked[p] = true
			} else {
				refused++
			}
			mu.Unlock()
			if err != nil {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	// waitFor polls cond (under mu) until it holds.
	waitFor := func(what string, within time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			workersAlive()
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%s: not within %v (%d acknowledged, %d handled, %d enqueues refused)", what, within, len(acked), len(handled), refused)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("load before the failover", 20*time.Second, func() bool { return len(acked) >= 100 && len(handled) >= 50 })

	killed := time.Now()
	failover()
	promoted := time.Now()
	mu.Lock()
	ackedAtPromotion := len(acked)
	mu.Unlock()

	var g grant
	select {
	case g = <-granted:
	case <-time.After(4*lease + 10*time.Second):
		select {
		case <-holder.Done():
			t.Fatal("the holder lost its session and the waiting locker was not granted the lock")
		default:
		}
		if holderMustLose {
			t.Fatalf("the holder still counts itself the holder %v after the failover", time.Since(killed))
		}
		// The lock state survived the failover: the holder still holds
		// the lock, and lets it go.
		t.Logf("the holder kept its lock across the failover; releasing it")
		released.Do(func() { close(releasedC) })
		if _, err := holder.Release(ctxT(t), "fo"); err != nil {
			t.Fatalf("the holder, alive after the failover, cannot release: %v", err)
		}
		select {
		case g = <-granted:
		case <-time.After(20 * time.Second):
			t.Fatal("the lock was not granted within 20 s of the holder's release")
		}
	}
	if !g.holderKnew {
		t.Fatalf("the lock was granted %v after the kill while the holder from before neither released it nor heard it lost its session", g.at.Sub(killed))
	}
	if g.token <= hg[0].Token {
		t.Errorf("fencing token went from %d to %d across the failover", hg[0].Token, g.token)
	}
	select {
	case <-holder.Done():
		wantErr(t, holder.Err(), baton.ErrSessionLost)
	default:
		if holderMustLose {
			t.Fatal("the lock was granted again and the holder from before was not told it lost its session")
		}
	}

	waitFor("acknowledged enqueues after the promotion", 30*time.Second, func() bool { return len(acked) >= ackedAtPromotion+50 })
	close(stopEnq)
	<-enqDone
	waitFor("every acknowledged enqueue handled", 30*time.Second, func() bool {
		for p := range acked {
			if handled[p] == 0 {
				return false
			}
		}
		return true
	})
	heard("after")
	workersAlive()
	mu.Lock()
	twice := 0
	for _, n := range handled {
		if n > 1 {
			twice++
		}
	}
	t.Logf("%d enqueues acknowledged (%d before the promotion), all handled, %d twice; %d enqueue calls failed during the failover; promotion took %v; the lock was granted again %v after the kill (the locker lost %d sessions)",
		len(acked), ackedAtPromotion, twice, refused, promoted.Sub(killed).Round(time.Millisecond), g.at.Sub(killed).Round(time.Millisecond), g.lost)
	mu.Unlock()
}

// TestFailoverPostgres: a PostgreSQL primary with a synchronous standby is
// killed with SIGKILL mid-load and the standby promoted; baton, on a DSN
// that names both hosts (target_session_attrs=read-write), carries on on
// the new primary. The lock state (UNLOGGED tables) does not reach the
// standby, so the holder from before hears it lost its session before the
// lock is granted again.
func TestFailoverPostgres(t *testing.T) {
	pp := startPGPair(t)
	failoverUnderLoad(t, pp.dsn(), func() { pp.failover(t) }, true)
}
