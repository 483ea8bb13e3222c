package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/batontest"
)

// TestCommandConnections counts, in pg_stat_activity and MariaDB's
// process list, the server connections of baton processes: a lock holder
// holds one, a waiter at most two (its pool's and the listener's), the
// waiter once granted one again, an idle worker two.
func TestCommandConnections(t *testing.T) {
	for _, label := range []string{"postgres", "mysql"} {
		t.Run(label, func(t *testing.T) {
			t.Parallel()
			dsn := batontest.NewDSN(t, label)
			counter := newConnCounter(t, label)
			if code, _, errs := run(t, dsn, "migrate"); code != 0 {
				t.Fatalf("migrate: exit %d: %s", code, errs)
			}
			dir := t.TempDir()
			holder := startConnProc(t, dsn, "lock", "--write", "job", "--", "sh", "-c", "touch "+dir+"/held; exec sleep 60")
			waitFile(t, filepath.Join(dir, "held"))
			counter.atMost(t, "a lock holder", holder, 1, true)

			waiter := startConnProc(t, dsn, "lock", "--write", "--timeout", "60s", "job", "--", "sh", "-c", "touch "+dir+"/granted; exec sleep 60")
			// The waiter connects, finds the lock taken, and waits.
			counter.atLeast(t, "a lock waiter", waiter, 2)
			counter.atMost(t, "a lock waiter", waiter, 2, false)
			if _, err := os.Stat(filepath.Join(dir, "granted")); err == nil {
				t.Fatal("the waiter ran its command while the holder held the lock")
			}

			holder.stop(t)
			waitFile(t, filepath.Join(dir, "granted"))
			counter.settles(t, "a waiter that got its lock", waiter, 1)
			counter.atMost(t, "a waiter that got its lock", waiter, 1, true)
			waiter.stop(t)

			worker := startConnProc(t, dsn, "work", "q", "--", "true")
			counter.atLeast(t, "an idle worker", worker, 2)
			counter.atMost(t, "an idle worker", worker, 2, false)
			worker.stop(t)
		})
	}
}

// batonProc is a baton process started in the background.
type batonProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	errs *strings.Builder
}

func startConnProc(t *testing.T, dsn string, args ...string) *batonProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--dsn", dsn}, args...)...)
	errs := &strings.Builder{}
	cmd.Stderr = &lockedWriter{w: errs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &batonProc{cmd: cmd, done: make(chan struct{}), errs: errs}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop ends the process (SIGTERM: a lock passes it on to its command, a
// worker stops) and waits for it.
func (p *batonProc) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("baton %v did not stop on SIGINT", p.cmd.Args[3:])
	}
}

func (p *batonProc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

// connCounter counts a process's connections as the server lists them:
// the server's client ports that are the process's own sockets.
type connCounter struct {
	db    *sql.DB
	query string // the client ports, or hosts ending in :port (MySQL)
}

func newConnCounter(t *testing.T, label string) *connCounter {
	var base string
	c := &connCounter{}
	if label == "postgres" {
		base = batontest.PostgresDSN()
		c.query = "SELECT client_port FROM pg_stat_activity WHERE client_port IS NOT NULL"
	} else {
		base = batontest.MySQLDSN()
		c.query = "SELECT SUBSTRING_INDEX(HOST, ':', -1) FROM information_schema.PROCESSLIST WHERE HOST LIKE '%:%'"
	}
	db, err := batontest.OpenSQL(base)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	c.db = db
	return c
}

// count is the number of p's connections the server lists now.
func (c *connCounter) count(t *testing.T, p *batonProc) int {
	t.Helper()
	mine := socketPorts(t, p.cmd.Process.Pid)
	rows, err := c.db.Query(c.query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var port string
		if err := rows.Scan(&port); err != nil {
			t.Fatal(err)
		}
		if v, err := strconv.Atoi(port); err == nil && mine[v] {
			n++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// atMost checks, 15 times 100 ms apart, that p has at most max
// connections and still runs; exact also wants max seen at least once
// (the count sees the process at all).
func (c *connCounter) atMost(t *testing.T, what string, p *batonProc, max int, exact bool) {
	t.Helper()
	seen := 0
	for i := 0; i < 15; i++ {
		if !p.running() {
			t.Fatalf("%s exited: %s", what, p.errs)
		}
		n := c.count(t, p)
		if n > max {
			t.Fatalf("%s holds %d server connections, want at most %d", what, n, max)
		}
		seen = maxInt(seen, n)
		time.Sleep(100 * time.Millisecond)
	}
	if exact && seen != max {
		t.Fatalf("%s: saw at most %d server connections, want %d (the count does not see the process)", what, seen, max)
	}
}

// atLeast waits until p has n connections at once (a waiter's listener
// is up, a worker waits for messages).
func (c *connCounter) atLeast(t *testing.T, what string, p *batonProc, n int) {
	t.Helper()
	got := 0
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !p.running() {
			t.Fatalf("%s exited: %s", what, p.errs)
		}
		if got = c.count(t, p); got >= n {
			return
		}
	}
	t.Fatalf("%s never had %d server connections (last %d)", what, n, got)
}

// settles waits until p has at most n connections (a granted waiter
// closes its listener once its call returned).
func (c *connCounter) settles(t *testing.T, what string, p *batonProc, n int) {
	t.Helper()
	got := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = c.count(t, p); got <= n {
			return
		}
	}
	t.Fatalf("%s keeps %d server connections, want at most %d", what, got, n)
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// socketPorts are the local TCP ports of process pid's sockets (Linux:
// its descriptors' socket inodes looked up in /proc/PID/net/tcp{,6}).
func socketPorts(t *testing.T, pid int) map[int]bool {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return nil // exited
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, name))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
				ports[int(p)] = true
			}
		}
		f.Close()
	}
	return ports
}

// TestLockWaitsForConnectionSlots runs more `baton lock --timeout 60s`
// processes on one name than a private PostgreSQL has connection slots
// (max_connections 20): a process the server refuses ("too many clients",
// 53300) tries again until a slot frees, and every one gets the lock and
// runs its command.
func TestLockWaitsForConnectionSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private PostgreSQL")
	}
	dsn := startSmallPG(t, 20)
	if code, _, errs := run(t, dsn, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, errs)
	}
	const procs = 40
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		code int
		errs string
	}
	results := make(chan result, procs)
	for i := 0; i < procs; i++ {
		go func() {
			cmd := exec.CommandContext(ctx, bin, "--dsn", dsn, "lock", "--write", "--timeout", "60s", "cron", "--",
				"sh", "-c", "echo x >> "+dir+"/runs; sleep 0.05")
			var errb strings.Builder
			cmd.Stderr = &errb
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				code = -1
			}
			results <- result{code, errb.String()}
		}()
	}
	failed := 0
	for i := 0; i < procs; i++ {
		r := <-results
		if r.code != 0 {
			failed++
			t.Errorf("baton lock exited %d: %s", r.code, strings.TrimSpace(r.errs))
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d processes failed against 20 connection slots", failed, procs)
	}
	runs, err := os.ReadFile(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(runs), "x"); n != procs {
		t.Fatalf("%d commands ran, want %d", n, procs)
	}
}

// startSmallPG starts a private PostgreSQL with max_connections slots (none
// reserved for superusers) on a port and data directory of its own, removed
// at the end, and returns its DSN.
func startSmallPG(t *testing.T, slots int) string {
	t.Helper()
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(m) == 0 {
		t.Fatal("PostgreSQL server programs not found under /usr/lib/postgresql")
	}
	pgbin := filepath.Dir(m[len(m)-1])
	asPostgres := func(name string, args ...string) *exec.Cmd {
		if os.Geteuid() == 0 {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(pgbin, name)}, args...)...)
		}
		return exec.Command(filepath.Join(pgbin, name), args...)
	}
	dir, err := os.MkdirTemp("", "baton-pgslots-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o777)
	data := filepath.Join(dir, "data")
	t.Cleanup(func() {
		_ = asPostgres("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop").Run()
		_ = os.RemoveAll(dir)
	})
	if out, err := asPostgres("initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v: %s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off -c max_connections=%d -c superuser_reserved_connections=0",
		port, dir, slots)
	if out, err := asPostgres("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("start private PostgreSQL: %v: %s %s", err, out, log)
	}
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: fmt.Sprintf("127.0.0.1:%d", port), Path: "/postgres"}
	return u.String()
}
