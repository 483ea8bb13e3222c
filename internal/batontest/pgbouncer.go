package batontest

import (
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
)

// PgBouncer runs the conformance suites through PgBouncer in transaction
// mode with its default settings (the DSN differs from a direct one only in
// its port), one private pgbouncer per test binary in front of the test
// PostgreSQL server. Each test gets a database of its own (the pooler
// refuses search_path, so a schema cannot be chosen per test), and LISTEN
// goes to the server directly through listen_dsn.
var bouncer struct {
	once sync.Once
	port int
	log  string // its log file
	err  error
	keep *os.File // the write end of the wrappers' standard input, open for the life of the test binary

	mu      sync.Mutex
	wrapper int // pid of the running wrapper shell (pgbouncer is its child)
}

// bouncerScript runs pgbouncer ("$@") and ends it, and removes its
// directory, when the test binary exits (the standard input it reads
// through fd 3 closes then). When pgbouncer exits by itself the script
// exits with its status and leaves the directory (and log) for the next
// start.
const bouncerScript = `exec 3<&0
"$@" & pid=$!
(read _ <&3; : >"$BOUNCER_DIR/.stop"; kill $pid 2>/dev/null) & guard=$!
wait $pid; status=$?
if [ -e "$BOUNCER_DIR/.stop" ]; then rm -rf "$BOUNCER_DIR"; exit 0; fi
kill $guard 2>/dev/null
exit $status`

// startBouncer starts the private pgbouncer and keeps it running: should it
// exit while the tests run (it is infrastructure, like the servers), the
// test binary says so on its standard error with the end of pgbouncer's
// log, and starts it again on the same port.
func startBouncer() (int, error) {
	bouncer.once.Do(func() {
		bouncer.port, bouncer.err = launchBouncer()
	})
	return bouncer.port, bouncer.err
}

func launchBouncer() (int, error) {
	bin, err := bouncerBinary()
	if err != nil {
		return 0, err
	}
	port, dir, err := configureBouncer()
	if err != nil {
		return 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	bouncer.keep = w
	b := &bouncerProcess{args: bouncerArgs(bin, dir), dir: dir, stdin: r}
	sh, err := b.start()
	if err != nil {
		return 0, err
	}
	logPath := filepath.Join(dir, "pgbouncer.log")
	bouncer.log = logPath
	if err := waitListening(port, logPath); err != nil {
		return 0, err
	}
	go superviseBouncer(sh, b.start, port, logPath)
	return port, nil
}

// bouncerBinary finds the pgbouncer program.
func bouncerBinary() (string, error) {
	bin, err := exec.LookPath("pgbouncer")
	if err == nil {
		return bin, nil
	}
	bin = "/usr/sbin/pgbouncer"
	if _, serr := os.Stat(bin); serr != nil {
		return "", fmt.Errorf("pgbouncer is not installed (apt-get install pgbouncer; .ci/run does): %w", err)
	}
	return bin, nil
}

// configureBouncer picks a free port and writes the pooler's
// configuration, in front of the test PostgreSQL server, into a new
// directory.
func configureBouncer() (port int, dir string, err error) {
	pg, err := url.Parse(PostgresDSN())
	if err != nil {
		return 0, "", err
	}
	if port, err = freePort(); err != nil {
		return 0, "", err
	}
	if dir, err = os.MkdirTemp("", "baton-pgbouncer-"); err != nil {
		return 0, "", err
	}
	_ = os.Chmod(dir, 0o777)
	return port, dir, writeBouncerConfig(dir, pg, port)
}

// freePort returns a local TCP port nobody listens on.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// bouncerArgs is the command line of pgbouncer with the configuration in
// dir.
func bouncerArgs(bin, dir string) []string {
	args := []string{bin}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "postgres") // pgbouncer refuses to run as root
	}
	return append(args, filepath.Join(dir, "pgbouncer.ini"))
}

// bouncerProcess starts pgbouncer under bouncerScript, reading stdin.
type bouncerProcess struct {
	args  []string
	dir   string
	stdin *os.File
}

// start starts the wrapper shell and records its pid.
func (b *bouncerProcess) start() (*exec.Cmd, error) {
	sh := exec.Command("sh", append([]string{"-c", bouncerScript, "sh"}, b.args...)...)
	sh.Stdin = b.stdin
	sh.Env = append(os.Environ(), "BOUNCER_DIR="+b.dir)
	if err := sh.Start(); err != nil {
		return nil, err
	}
	bouncer.mu.Lock()
	bouncer.wrapper = sh.Process.Pid
	bouncer.mu.Unlock()
	return sh, nil
}

// superviseBouncer starts pgbouncer again whenever it exits, saying so on
// the test binary's standard error with the end of its log. Debian 12's
// PgBouncer 1.18 aborts now and then on a cancel request that meets a
// client's close ("server_proto: server in bad state: 11", fixed upstream
// in 1.21), which pgx sends whenever a query's context ends; a run of the
// suite can see that many times, so there is no limit on restarts, only on
// a pgbouncer that cannot stay up at all (restarts).
func superviseBouncer(sh *exec.Cmd, start func() (*exec.Cmd, error), port int, logPath string) {
	var again restarts
	for {
		began := time.Now()
		err := sh.Wait()
		tail := logTail(logPath, 20)
		if !again.after(time.Since(began)) {
			fmt.Fprintf(os.Stderr, "batontest: the private pgbouncer on port %d exited (%v) %d times in a row within %v of its start; not starting it again. Its log ends:\n%s\n", port, err, again.quick, quickExit, tail)
			return
		}
		fmt.Fprintf(os.Stderr, "batontest: the private pgbouncer on port %d exited (%v); starting it again. Its log ends:\n%s\n", port, err, tail)
		time.Sleep(100 * time.Millisecond)
		if sh, err = start(); err != nil {
			fmt.Fprintf(os.Stderr, "batontest: restarting the private pgbouncer: %v\n", err)
			return
		}
	}
}

// quickExit: a pgbouncer that exits sooner than this after its start did
// not come up (a port taken, a bad configuration), rather than crash while
// serving.
const quickExit = 2 * time.Second

// restarts decides whether the supervisor starts pgbouncer again: always
// after a run that served for a while, and after quick exits only until
// three come in a row.
type restarts struct {
	quick int // quick exits in a row
}

// after records an exit after running for ran, and tells whether to start
// pgbouncer again.
func (r *restarts) after(ran time.Duration) bool {
	if ran >= quickExit {
		r.quick = 0
		return true
	}
	r.quick++
	return r.quick < 3
}

// writeBouncerConfig writes pgbouncer.ini and its users file into dir: a
// pooler in transaction mode on port in front of the test server pg.
func writeBouncerConfig(dir string, pg *url.URL, port int) error {
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 40
logfile = %s
`, pg.Hostname(), pg.Port(), port, filepath.Join(dir, "users.txt"), filepath.Join(dir, "pgbouncer.log"))
	if err := os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "users.txt"), []byte(strconv.Quote(pg.User.Username())+` ""`+"\n"), 0o644)
}

// waitListening waits until pgbouncer accepts connections on port.
func waitListening(port int, logPath string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgbouncer did not start: %v; log: %s", err, logTail(logPath, 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var createDBMu sync.Mutex

func newPgBouncer(t testing.TB) string {
	port, err := startBouncer()
	if err != nil {
		t.Fatal(err)
	}
	base := PostgresDSN()
	db := admin(t, "pgx", base)
	name := "bt_" + rnd()
	createDBMu.Lock() // concurrent copies of template1 wait on each other anyway
	_, err = db.Exec("CREATE DATABASE " + name)
	createDBMu.Unlock()
	if err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = db.ExecContext(ctx, "DROP DATABASE "+name+" WITH (FORCE)")
	})
	direct, _ := url.Parse(base)
	direct.Path = "/" + name
	direct.RawQuery = ""
	u := *direct
	u.Host = fmt.Sprintf("127.0.0.1:%d", port)
	q := url.Values{}
	q.Set("listen_dsn", direct.String())
	u.RawQuery = q.Encode()
	// PgBouncer may be between a crash and its restart (superviseBouncer;
	// Debian's 1.18 aborts with "server in bad state" after some cancel
	// requests): a test whose first connection came in that gap failed
	// with "connection refused" before it tested anything.
	if err := waitListening(port, bouncer.log); err != nil {
		t.Fatal(err)
	}
	return u.String()
}

// pooledSQLDB opens a test database through the pooler as an application
// would: without named statements.
func pooledSQLDB(dsn string) (*sql.DB, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Del("listen_dsn")
	q.Del("pooler")
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	return sql.Open("pgx", u.String())
}

// BouncerLog returns the path of the test pgbouncer's log file ("" before
// it started).
func BouncerLog() string { return bouncer.log }
