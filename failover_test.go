package baton_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
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
	"github.com/batonhq/baton/internal/batontest"
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

// holdBack stops the primary's walsender (SIGSTOP) for a second before
// the kill, which SIGKILLs it with the primary.
func (pp *pgPair) holdBack(t *testing.T) {
	primary := postmasterPID(t, filepath.Join(pp.primary.dir, "data"))
	out, err := exec.Command("pgrep", "-P", strconv.Itoa(primary), "-f", "walsender").Output()
	if err != nil {
		t.Fatalf("find the primary's walsender: %v", err)
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
	}
	time.Sleep(time.Second)
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

// failoverCase is a failover for failoverUnderLoad.
type failoverCase struct {
	dsn string
	// holdBack stops replication for a while: commits then wait for
	// the replica (synchronous or semi-synchronous replication), and
	// none is acknowledged that it lacks at the kill. With asynchronous
	// replication they are, and the test fails.
	holdBack func()
	failover func() // kills the primary and promotes its replica
	// holderDSN, when set, is the lock holder's own way to the servers,
	// through proxies that partition (isolate) and heal it: isolated
	// from just before the kill until the lock is granted again, the
	// holder cannot reach the promoted server and hears that it lost its
	// session only at its local deadline (its lease, 5 s, the longest in
	// use), so the new lock state must grant nothing before then.
	holderDSN     string
	isolate, heal func()
	// stateLost: the lock state does not survive the failover, so every
	// session from before is lost, the holder's too.
	stateLost bool
}

// failoverUnderLoad runs baton while fc.failover happens mid-load: an
// enqueuer pushes messages, two workers handle them, a listener listens, a
// session holds a write lock and another client waits for it. It checks
// that every acknowledged enqueue is handled, that the workers and the
// listener carry on, and that the lock is never granted while the holder
// from before still counts itself its holder: it heard it lost its
// session first (always, with fc.stateLost), or it still held the
// lock on the promoted server and released it.
func failoverUnderLoad(t *testing.T, fc failoverCase) {
	const lease = 2 * time.Second
	opts := baton.Options{Lease: lease, PollInterval: 100 * time.Millisecond}
	began := time.Now()
	phase := func(what string) { t.Logf("%v: %s", time.Since(began).Round(time.Millisecond), what) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn := fc.dsn
	prod, lockerC, listenC := openDSN(t, dsn, opts), openDSN(t, dsn, opts), openDSN(t, dsn, opts)
	// The holder's lease is the longest in use: long enough to outlast
	// the failover when its renewals reach the promoted server.
	const holderLease = 5 * time.Second
	holderOpts := baton.Options{Lease: holderLease, PollInterval: 100 * time.Millisecond}
	holderDSN := dsn
	if fc.holderDSN != "" {
		holderDSN = fc.holderDSN
		t.Cleanup(fc.heal) // before the holder's client closes, also on failure
	}
	holderC := openDSN(t, holderDSN, holderOpts)

	var mu sync.Mutex
	acked := map[string]bool{}
	handled := map[string]int{}
	workDone := make(chan error, 3)
	// Messages go to two queues: "fo", worked from the start, and
	// "backlog", worked only after the promotion, so that every message
	// acknowledged there before the kill must be on the promoted server.
	// A claim that committed on the primary (and reached the replica)
	// while its reply was lost in the kill goes back once its worker
	// reaches the promoted server (or, where the session survives the
	// failover and the worker could not, when its visibility runs out: 5 s
	// here, not the default 30 s).
	var workers []*baton.Client
	work := func(wc *baton.Client, queue string) {
		go func() {
			workDone <- wc.Work(ctx, queue, func(ctx context.Context, m *baton.Message) error {
				mu.Lock()
				handled[string(m.Payload)]++
				mu.Unlock()
				return nil
			}, baton.WorkerOptions{Concurrency: 2, Visibility: 5 * time.Second})
		}()
	}
	for w := 0; w < 2; w++ {
		wc := openDSN(t, dsn, opts)
		workers = append(workers, wc)
		work(wc, "fo")
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
	phase("clients open, the listener hears")

	holder := session(t, holderC)
	hg := mustLock(t, holder, "fo", baton.Write, "x")
	// A session from before on a client that reaches the promoted server.
	bystander := session(t, listenC)
	var released sync.Once
	releasedC := make(chan struct{})
	// The waiting locker: a new session whenever its own is lost. At its
	// grant, the holder has heard it lost its session or has released.
	type grant struct {
		at         time.Time
		token      int64
		holderKnew bool
		failed     int // lock calls that failed first (their sessions lost)
	}
	granted := make(chan grant, 1)
	go func() {
		failed := 0
		for ctx.Err() == nil {
			s, err := lockerC.NewSession(ctx)
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			g, err := s.Lock(ctx, "fo", baton.Write, baton.Forever, "x")
			if err != nil {
				failed++
				continue
			}
			r := grant{at: time.Now(), token: g[0].Token, failed: failed}
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
			case <-ctx.Done():
				return
			default:
			}
			queue := []string{"fo", "backlog"}[i%2]
			p := fmt.Sprint(queue, i)
			ectx, ecancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := prod.Enqueue(ectx, queue, []byte(p))
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
	waitFor("load before the failover", 20*time.Second, func() bool { return len(acked) >= 200 && len(handled) >= 50 })

	phase("load before the failover")
	fc.holdBack()
	if fc.isolate != nil {
		fc.isolate()
	}
	killed := time.Now()
	fc.failover()
	promoted := time.Now()
	mu.Lock()
	ackedAtPromotion := len(acked)
	mu.Unlock()
	// The backlog's worker: one of the same clients, after the failover.
	work(workers[0], "backlog")

	var g grant
	select {
	case g = <-granted:
	case <-time.After(holderLease + 2*time.Second):
		select {
		case <-holder.Done():
		default:
			if fc.stateLost {
				break
			}
			// Alive a lease after the kill: the holder renewed its
			// session on the promoted server, where its lock state
			// survived. It still holds the lock, and lets it go.
			t.Logf("the holder kept its lock across the failover; releasing it")
			released.Do(func() { close(releasedC) })
			if _, err := holder.Release(ctxT(t), "fo"); err != nil && !errors.Is(err, baton.ErrSessionLost) {
				t.Fatalf("the holder, alive after the failover, cannot release: %v", err)
			}
		}
		select {
		case g = <-granted:
		case <-time.After(4*lease + 10*time.Second):
			select {
			case <-holder.Done():
				t.Fatalf("the holder lost its session and the waiting locker was not granted the lock %v after the kill", time.Since(killed))
			default:
				t.Fatalf("the holder still counts itself the holder %v after the failover", time.Since(killed))
			}
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
		if fc.stateLost {
			t.Fatal("the lock was granted again and the holder from before was not told it lost its session")
		}
	}

	phase("lock granted again")
	if fc.heal != nil {
		fc.heal()
	}
	if fc.stateLost {
		select {
		case <-bystander.Done():
			wantErr(t, bystander.Err(), baton.ErrSessionLost)
		case <-time.After(2 * lease):
			t.Fatal("a session from before is alive on the promoted server, which has none of the lock state")
		}
	}
	waitFor("acknowledged enqueues after the promotion", 30*time.Second, func() bool { return len(acked) >= ackedAtPromotion+100 })
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
	phase("every acknowledged enqueue handled")
	heard("after")
	phase("the listener hears")
	workersAlive()
	mu.Lock()
	twice := 0
	for _, n := range handled {
		if n > 1 {
			twice++
		}
	}
	t.Logf("%d enqueues acknowledged (%d before the promotion), all handled, %d twice; %d enqueue calls failed during the failover; promotion took %v; the lock was granted again %v after the kill (%d lock calls failed before)",
		len(acked), ackedAtPromotion, twice, refused, promoted.Sub(killed).Round(time.Millisecond), g.at.Sub(killed).Round(time.Millisecond), g.failed)
	mu.Unlock()
}

// TestFailoverPostgres: a PostgreSQL primary with a synchronous standby is
// killed with SIGKILL mid-load and the standby promoted; baton, on a DSN
// that names both hosts (target_session_attrs=read-write), carries on on
// the new primary. The lock state (UNLOGGED tables) does not reach the
// standby, so the holder from before hears it lost its session before the
// lock is granted again: at once when it reaches the new primary, at its
// local deadline when it is cut off from it.
func TestFailoverPostgres(t *testing.T) {
	t.Run("holder-reaches-the-new-primary", func(t *testing.T) {
		t.Parallel()
		pp := startPGPair(t)
		failoverUnderLoad(t, failoverCase{dsn: pp.dsn(), holdBack: func() { pp.holdBack(t) }, failover: func() { pp.failover(t) }, stateLost: true})
	})
	t.Run("holder-cut-off", func(t *testing.T) {
		t.Parallel()
		pp := startPGPair(t)
		a := batontest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", pp.primary.port))
		b := batontest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", pp.standby.port))
		failoverUnderLoad(t, failoverCase{
			dsn:       pp.dsn(),
			holdBack:  func() { pp.holdBack(t) },
			failover:  func() { pp.failover(t) },
			holderDSN: fmt.Sprintf("postgres://postgres@%s,%s/test?target_session_attrs=read-write", a.Addr(), b.Addr()),
			isolate:   func() { a.Partition(); b.Partition() },
			heal:      func() { a.Heal(); b.Heal() },
			stateLost: true,
		})
	})
}

// switchProxy forwards TCP connections to its target, which the test
// changes at a failover: it stands for what points a single-host DSN at
// the current primary (a virtual IP, a DNS name, MaxScale or ProxySQL).
type switchProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  map[net.Conn]bool
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.switchTo("") })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *switchProxy) serve(c net.Conn) {
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	if target == "" {
		c.Close()
		return
	}
	s, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.target != target {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}
	go pipe(s, c)
	go pipe(c, s)
}

// switchTo closes every forwarded connection and sends new ones to target
// ("": refuse them).
func (p *switchProxy) switchTo(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func (p *switchProxy) addr() string { return p.ln.Addr().String() }

// mariaPair is a private MariaDB primary with a semi-synchronous replica,
// each with its own data directory, port and socket; both are killed (by
// PID) and removed when the test ends.
type mariaPair struct {
	primary, replica *privateMaria
}

func rootDB(t *testing.T, m *privateMaria) *sql.DB {
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", m.port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// slaveStatus returns the replica's SHOW SLAVE STATUS as text by column.
func slaveStatus(t *testing.T, db *sql.DB) map[string]string {
	rows, err := db.Query("SHOW SLAVE STATUS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	if !rows.Next() {
		return out
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	for i, c := range cols {
		out[c] = string(vals[i])
	}
	return out
}

func startMariaPair(t *testing.T, replicaExtra ...string) *mariaPair {
	_, err1 := exec.LookPath("mariadb-install-db")
	_, err2 := exec.LookPath("mariadbd")
	if err2 != nil {
		_, err2 = os.Stat("/usr/sbin/mariadbd")
	}
	needServerPrograms(t, "MariaDB server programs (mariadb-install-db, mariadbd)", err1 == nil && err2 == nil)
	// Semi-synchronous replication, built into MariaDB 10.3 and later: a
	// commit is acknowledged to its client once the replica has it in
	// its relay log (AFTER_SYNC: nobody sees it before). With grant
	// tables: a routine made without them has an empty definer, which
	// the replica refuses.
	p := newPrivateMaria(t, "--skip-grant-tables=0", "--server-id=1", "--log-bin=primary-bin",
		"--rpl-semi-sync-master-enabled=ON", "--rpl-semi-sync-master-wait-point=AFTER_SYNC",
		"--rpl-semi-sync-master-timeout=60000")
	r := newPrivateMaria(t, append([]string{"--skip-grant-tables=0", "--server-id=2", "--log-bin=replica-bin",
		"--rpl-semi-sync-slave-enabled=ON"}, replicaExtra...)...)
	mp := &mariaPair{primary: p, replica: r}
	rdb := rootDB(t, r)
	if _, err := rdb.Exec(fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='root', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1", p.port)); err != nil {
		t.Fatal(err)
	}
	mp.startReplication(t)
	if _, err := rootDB(t, p).Exec("CREATE DATABASE test"); err != nil {
		t.Fatal(err)
	}
	return mp
}

// startReplication starts the replica's replication and waits until the
// primary has it as its semi-synchronous replica.
func (mp *mariaPair) startReplication(t *testing.T) {
	pdb, rdb := rootDB(t, mp.primary), rootDB(t, mp.replica)
	if _, err := rdb.Exec("START SLAVE"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var name, clients, status string
		err := pdb.QueryRow("SHOW STATUS LIKE 'Rpl_semi_sync_master_clients'").Scan(&name, &clients)
		if err == nil {
			err = pdb.QueryRow("SHOW STATUS LIKE 'Rpl_semi_sync_master_status'").Scan(&name, &status)
		}
		if err == nil && clients == "1" && status == "ON" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica is not a semi-synchronous replica after 30 s: clients %q, status %q, %v; replica: %v", clients, status, err, slaveStatus(t, rdb))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// holdBack stops the replica's I/O thread for a second before the kill.
func (mp *mariaPair) holdBack(t *testing.T) {
	if _, err := rootDB(t, mp.replica).Exec("STOP SLAVE IO_THREAD"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
}

// failover kills the primary with SIGKILL and promotes the replica: it
// applies what it received, stops replicating and takes writes.
func (mp *mariaPair) failover(t *testing.T) {
	mp.primary.stop("kill9")
	rdb := rootDB(t, mp.replica)
	st := slaveStatus(t, rdb)
	if st["Last_SQL_Error"] != "" {
		t.Fatalf("replication broke before the failover: %s", st["Last_SQL_Error"])
	}
	var waited int
	if err := rdb.QueryRow("SELECT MASTER_GTID_WAIT(?, 30)", st["Gtid_IO_Pos"]).Scan(&waited); err != nil || waited != 0 {
		t.Fatalf("the replica did not apply what it received (%s) within 30 s: %d %v; %v", st["Gtid_IO_Pos"], waited, err, slaveStatus(t, rdb))
	}
	for _, q := range []string{"STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF"} {
		if _, err := rdb.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestFailoverMariaDB: a MariaDB primary with a semi-synchronous replica
// is killed with SIGKILL mid-load and the replica promoted; the address
// baton's DSN names (here a TCP proxy, standing for a virtual IP, a DNS
// name or MaxScale/ProxySQL) is pointed at the promoted replica, and the
// same clients carry on: every acknowledged enqueue is handled.
//
// The lock state (MEMORY tables) replicates with the rest. On a replica
// that has run since it was made, it survives the promotion: sessions go
// on and the holder keeps its lock until it releases it. A restarted
// replica has lost it (a restart empties MEMORY tables, and with
// slave_exec_mode=IDEMPOTENT replication goes on without it): on the
// promoted replica every session from before is lost, and the holder hears
// it before the lock is granted again.
func TestFailoverMariaDB(t *testing.T) {
	t.Run("replica-kept-the-lock-state", func(t *testing.T) {
		t.Parallel()
		mp := startMariaPair(t)
		px := newSwitchProxy(t, fmt.Sprintf("127.0.0.1:%d", mp.primary.port))
		failoverUnderLoad(t, failoverCase{
			dsn:      fmt.Sprintf("mysql://root@%s/test", px.addr()),
			holdBack: func() { mp.holdBack(t) },
			failover: func() {
				px.switchTo("")
				mp.failover(t)
				px.switchTo(fmt.Sprintf("127.0.0.1:%d", mp.replica.port))
			},
		})
	})
	t.Run("replica-restarted", func(t *testing.T) {
		t.Parallel()
		mp := startMariaPair(t, "--slave-exec-mode=IDEMPOTENT")
		px := newSwitchProxy(t, fmt.Sprintf("127.0.0.1:%d", mp.primary.port))
		dsn := fmt.Sprintf("mysql://root@%s/test", px.addr())
		// Locks are held while the replica restarts and released after:
		// the release changes rows the replica no longer has (without
		// slave_exec_mode=IDEMPOTENT its replication stops there, error
		// 1032, and the failover below fails).
		c := openDSN(t, dsn, baton.Options{Lease: 2 * time.Second})
		s := session(t, c)
		mustLock(t, s, "before", baton.Write, "x")
		mustLock(t, s, "before", baton.Read, "y")
		mp.replica.stop("fast")
		mp.replica.start()
		mp.startReplication(t)
		// (Commits wait for the replica while it restarts: the session
		// may have been lost meanwhile, and its client deletes its locks.)
		if _, err := s.Release(ctxT(t), "before"); err != nil && !errors.Is(err, baton.ErrSessionLost) {
			t.Fatal(err)
		}
		if _, err := session(t, c).Lock(ctxT(t), "before", baton.Write, 10*time.Second, "x", "z"); err != nil {
			t.Fatal(err)
		}
		h := batontest.NewProxy(t, px.addr())
		failoverUnderLoad(t, failoverCase{
			dsn:      dsn,
			holdBack: func() { mp.holdBack(t) },
			failover: func() {
				px.switchTo("")
				mp.failover(t)
				px.switchTo(fmt.Sprintf("127.0.0.1:%d", mp.replica.port))
			},
			holderDSN: fmt.Sprintf("mysql://root@%s/test", h.Addr()),
			isolate:   h.Partition,
			heal:      h.Heal,
			stateLost: true,
		})
	})
}
