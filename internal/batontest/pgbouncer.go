package batontest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	once  sync.Once
	port  int
	err   error
	stdin io.WriteCloser // held open for the life of the test binary
}

// startBouncer starts the private pgbouncer. It runs under a shell that
// kills it when the test binary exits (its standard input closes then).
func startBouncer() (int, error) {
	bouncer.once.Do(func() {
		bin, err := exec.LookPath("pgbouncer")
		if err != nil {
			bin = "/usr/sbin/pgbouncer"
			if _, serr := os.Stat(bin); serr != nil {
				bouncer.err = fmt.Errorf("pgbouncer is not installed (apt-get install pgbouncer; .ci/run does): %w", err)
				return
			}
		}
		pg, err := url.Parse(PostgresDSN())
		if err != nil {
			bouncer.err = err
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			bouncer.err = err
			return
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		dir, err := os.MkdirTemp("", "baton-pgbouncer-")
		if err != nil {
			bouncer.err = err
			return
		}
		_ = os.Chmod(dir, 0o777)
		user := pg.User.Username()
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
			bouncer.err = err
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "users.txt"), []byte(strconv.Quote(user)+` ""`+"\n"), 0o644); err != nil {
			bouncer.err = err
			return
		}
		args := []string{bin}
		if os.Geteuid() == 0 {
			args = append(args, "-u", "postgres") // pgbouncer refuses to run as root
		}
		args = append(args, filepath.Join(dir, "pgbouncer.ini"))
		sh := exec.Command("sh", "-c", `"$@" & pid=$!; read _; kill $pid; wait $pid; rm -rf "`+dir+`"`, "sh")
		sh.Args = append(sh.Args, args...)
		stdin, err := sh.StdinPipe()
		if err != nil {
			bouncer.err = err
			return
		}
		bouncer.stdin = stdin // a pipe left unreferenced is closed by its finalizer
		if err := sh.Start(); err != nil {
			bouncer.err = err
			return
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
				bouncer.err = fmt.Errorf("pgbouncer did not start: %v; log: %s", err, log)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		bouncer.port = port
	})
	return bouncer.port, bouncer.err
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
