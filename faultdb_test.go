package baton_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// privateDB is a database server of the test's own (own data directory and
// port) that the test may stop and start; the shared servers are never
// touched. Modes: "fast" (clean shutdown), "immediate" (PostgreSQL's crash
// shutdown) and "kill9" (SIGKILL of every server process).
type privateDB interface {
	dsn() string
	stop(mode string)
	start()
	modes() []string
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// privatePG is a private PostgreSQL.
type privatePG struct {
	t    *testing.T
	bin  string
	dir  string
	port int
	// extra is added to the server's command line (-c name=value ...).
	extra string
}

func pgBin() (string, bool) {
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(m) == 0 {
		return "", false
	}
	return filepath.Dir(m[len(m)-1]), true
}

// asPostgres runs a server program as the postgres user when the test runs
// as root (PostgreSQL refuses root).
func asPostgres(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

func startPrivatePG(t *testing.T) *privatePG {
	bin, ok := pgBin()
	if !ok {
		t.Fatal("PostgreSQL server programs not found under /usr/lib/postgresql")
	}
	dir, err := os.MkdirTemp("", "baton-pg-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o777)
	p := &privatePG{t: t, bin: bin, dir: dir, port: freePort(t)}
	t.Cleanup(func() {
		_ = asPostgres(filepath.Join(bin, "pg_ctl"), "-D", filepath.Join(dir, "data"), "-m", "immediate", "-w", "stop").Run()
		_ = os.RemoveAll(dir)
	})
	if out, err := asPostgres(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v: %s", err, out)
	}
	p.start()
	return p
}

func (p *privatePG) modes() []string { return []string{"fast", "immediate", "kill9"} }

func (p *privatePG) start() {
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off -c max_connections=200 %s", p.port, p.dir, p.extra)
	if out, err := asPostgres(filepath.Join(p.bin, "pg_ctl"), "-D", filepath.Join(p.dir, "data"), "-o", opts,
		"-l", filepath.Join(p.dir, "log"), "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "log"))
		p.t.Fatalf("start private PostgreSQL: %v: %s %s", err, out, log)
	}
}

func (p *privatePG) stop(mode string) {
	if mode == "kill9" {
		pidText, err := os.ReadFile(filepath.Join(p.dir, "data", "postmaster.pid"))
		if err != nil {
			p.t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pidText), "\n", 2)[0]))
		if err != nil {
			p.t.Fatalf("postmaster.pid: %v", err)
		}
		killTree(p.t, pid)
		return
	}
	if out, err := asPostgres(filepath.Join(p.bin, "pg_ctl"), "-D", filepath.Join(p.dir, "data"), "-m", mode, "-w", "stop").CombinedOutput(); err != nil {
		p.t.Fatalf("stop private PostgreSQL (%s): %v: %s", mode, err, out)
	}
}

func (p *privatePG) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres", p.port)
}

// killTree sends SIGKILL to pid and to its children (found before the kill,
// since they are re-parented after it) and waits until all are gone.
func killTree(t *testing.T, pid int) {
	pids := []int{pid}
	out, _ := exec.Command("pgrep", "-P", strconv.Itoa(pid)).Output()
	for _, f := range strings.Fields(string(out)) {
		if c, err := strconv.Atoi(f); err == nil {
			pids = append(pids, c)
		}
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, p := range pids {
		for syscall.Kill(p, 0) == nil {
			if time.Now().After(deadline) {
				t.Fatalf("process %d survived SIGKILL", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// privateMaria is a private MariaDB (mariadbd started by the test, no
// grant tables: the tests need no accounts).
type privateMaria struct {
	t    *testing.T
	dir  string
	port int
	cmd  *exec.Cmd
	exit chan struct{}
	// extra is added to mariadbd's command line; it replaces
	// --skip-log-bin when it names --log-bin.
	extra []string
}

func startPrivateMaria(t *testing.T) *privateMaria {
	m := newPrivateMaria(t)
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", m.port))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE test"); err != nil {
		t.Fatal(err)
	}
	return m
}

// newPrivateMaria installs and starts a private MariaDB with the extra
// command-line options, with no database of baton's.
func newPrivateMaria(t *testing.T, extra ...string) *privateMaria {
	if _, err := exec.LookPath("mariadb-install-db"); err != nil {
		t.Fatal("mariadb-install-db not found: install mariadb-server")
	}
	dir, err := os.MkdirTemp("", "baton-maria-")
	if err != nil {
		t.Fatal(err)
	}
	m := &privateMaria{t: t, dir: dir, port: freePort(t), extra: extra}
	t.Cleanup(func() {
		if m.cmd != nil {
			_ = m.cmd.Process.Kill()
			<-m.exit
		}
		_ = os.RemoveAll(dir)
	})
	// A temporary directory of its own: in the shared /tmp, concurrent
	// installs failed on each other's temporary tables ("Error on delete
	// of '/tmp/#sql-temptable-...MAI'").
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"), "--tmpdir=" + filepath.Join(dir, "tmp"),
		"--skip-test-db", "--auth-root-authentication-method=normal"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if out, err := exec.Command("mariadb-install-db", args...).CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v: %s", err, out)
	}
	m.start()
	return m
}

func (m *privateMaria) modes() []string { return []string{"fast", "kill9"} }

func (m *privateMaria) start() {
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(m.dir, "data"), "--tmpdir=" + filepath.Join(m.dir, "tmp"),
		"--port=" + strconv.Itoa(m.port), "--bind-address=127.0.0.1", "--socket=" + filepath.Join(m.dir, "sock"),
		"--pid-file=" + filepath.Join(m.dir, "pid"), "--skip-grant-tables",
		"--innodb-buffer-pool-size=64M", "--max-connections=300", "--log-error=" + filepath.Join(m.dir, "log")}
	if !slices.ContainsFunc(m.extra, func(a string) bool { return strings.HasPrefix(a, "--log-bin") }) {
		args = append(args, "--skip-log-bin")
	}
	args = append(args, m.extra...)
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	m.cmd = exec.Command("mariadbd", args...)
	if _, err := exec.LookPath("mariadbd"); err != nil {
		m.cmd = exec.Command("/usr/sbin/mariadbd", args...)
	}
	if err := m.cmd.Start(); err != nil {
		m.t.Fatalf("start private MariaDB: %v", err)
	}
	m.exit = make(chan struct{})
	go func(c *exec.Cmd, exit chan struct{}) { _ = c.Wait(); close(exit) }(m.cmd, m.exit)
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", m.port))
	if err != nil {
		m.t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-m.exit:
			log, _ := os.ReadFile(filepath.Join(m.dir, "log"))
			m.t.Fatalf("private MariaDB exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("private MariaDB not up after a minute: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (m *privateMaria) stop(mode string) {
	sig := syscall.SIGTERM
	if mode == "kill9" {
		sig = syscall.SIGKILL
	}
	_ = m.cmd.Process.Signal(sig)
	select {
	case <-m.exit:
	case <-time.After(60 * time.Second):
		m.t.Fatalf("private MariaDB did not stop (%s)", mode)
	}
	m.cmd = nil
}

func (m *privateMaria) dsn() string {
	return fmt.Sprintf("mysql://root@127.0.0.1:%d/test", m.port)
}

// eachPrivate runs body in parallel on a private PostgreSQL and MariaDB.
func eachPrivate(t *testing.T, body func(t *testing.T, db privateDB)) {
	if testing.Short() {
		t.Skip("starts private database servers")
	}
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		body(t, startPrivatePG(t))
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		body(t, startPrivateMaria(t))
	})
}
