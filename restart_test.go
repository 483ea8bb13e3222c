package baton_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// privatePG is a PostgreSQL server of the test's own (own data directory
// and port), which the test may stop and start; the shared server is never
// touched.
type privatePG struct {
	t    *testing.T
	bin  string
	dir  string
	port int
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p := &privatePG{t: t, bin: bin, dir: dir, port: port}
	if out, err := asPostgres(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v: %s", err, out)
	}
	t.Cleanup(func() {
		_ = asPostgres(filepath.Join(bin, "pg_ctl"), "-D", filepath.Join(dir, "data"), "-m", "immediate", "-w", "stop").Run()
		_ = os.RemoveAll(dir)
	})
	p.start()
	return p
}

func (p *privatePG) start() {
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off -c max_connections=200", p.port, p.dir)
	if out, err := asPostgres(filepath.Join(p.bin, "pg_ctl"), "-D", filepath.Join(p.dir, "data"), "-o", opts,
		"-l", filepath.Join(p.dir, "log"), "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "log"))
		p.t.Fatalf("start private PostgreSQL: %v: %s %s", err, out, log)
	}
}

func (p *privatePG) stop(mode string) {
	if out, err := asPostgres(filepath.Join(p.bin, "pg_ctl"), "-D", filepath.Join(p.dir, "data"), "-m", mode, "-w", "stop").CombinedOutput(); err != nil {
		p.t.Fatalf("stop private PostgreSQL (%s): %v: %s", mode, err, out)
	}
}

func (p *privatePG) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres", p.port)
}

// TestPostgresRestartMidDrain: workers draining a queue survive a
// PostgreSQL restart (fast and immediate), each on its own, and every
// message is handled; a lock holder hears it lost its session (the lock
// tables are UNLOGGED and emptied by the crash) and no two sessions ever
// hold the write lock at once.
func TestPostgresRestartMidDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private PostgreSQL")
	}
	pg := startPrivatePG(t)
	opts := baton.Options{Lease: time.Second, PollInterval: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := openDSN(t, pg.dsn(), opts)
	const n = 300
	var mu sync.Mutex
	seen := map[string]bool{}
	workDone := make(chan error, 2)
	for w := 0; w < 2; w++ {
		wc := openDSN(t, pg.dsn(), opts)
		go func() {
			workDone <- wc.Work(ctx, "rq", func(ctx context.Context, m *baton.Message) error {
				time.Sleep(5 * time.Millisecond)
				mu.Lock()
				seen[string(m.Payload)] = true
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
			for {
				if _, err := c.Enqueue(ctx, "rq", []byte(p)); err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond) // the server is restarting
			}
			enqueued++
		}
	}
	enqueue(n / 3)
	for _, mode := range []string{"fast", "immediate"} {
		pg.stop(mode)
		select {
		case err := <-workDone:
			t.Fatalf("a worker stopped during the outage (%s): %v", mode, err)
		default:
		}
		pg.start()
		enqueue(n / 3)
	}
	select {
	case <-holder.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the holder never heard its session was lost")
	}
	wantErr(t, holder.Err(), baton.ErrSessionLost)
	s2 := session(t, c)
	if _, err := s2.Lock(ctxT(t), "rs", baton.Write, 10*time.Second, "x"); err != nil {
		t.Fatalf("the lock was not free after the restarts: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		got := len(seen)
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
}
