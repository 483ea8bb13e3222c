package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "baton-cli-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "baton")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run executes the CLI and returns its exit status, stdout and stderr.
func run(t *testing.T, dsn string, args ...string) (int, string, string) {
	t.Helper()
	return runWith(t, dsn, "", nil, args...)
}

// runOK is run failing the test unless baton exits 0; it returns the
// standard output.
func runOK(t *testing.T, dsn string, args ...string) string {
	t.Helper()
	code, out, errs := run(t, dsn, args...)
	expect(t, code, errs, 0, "")
	return out
}

// exitCase is a command line of baton (--dsn included) and the exit
// status and the word on stderr it must give.
type exitCase struct {
	args []string
	code int
	word string
}

// checkExits runs every case and reports each whose exit status or
// stderr is not as expected.
func checkExits(t *testing.T, cases []exitCase) {
	t.Helper()
	for _, tc := range cases {
		code, _, errs := runArgs(t, "", nil, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.word) {
			t.Errorf("baton %v: exit %d, stderr %q; want %d naming %q", tc.args, code, errs, tc.code, tc.word)
		}
	}
}

func client(t *testing.T, dsn string) (*baton.Client, *baton.Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := baton.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

func expect(t *testing.T, code int, stderr string, wantCode int, word string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("exit status %d, want %d (stderr %q)", code, wantCode, stderr)
	}
	if word != "" {
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], word) {
			t.Fatalf("stderr %q: want one line naming %q", stderr, word)
		}
	}
}

func TestLockCommand(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		ctx := context.Background()
		// CMD's status passes through; stdout is CMD's.
		code, out, errs := run(t, dsn, "lock", "--write", "job", "--", "sh", "-c", "echo hi; exit 7")
		expect(t, code, errs, 7, "")
		if out != "hi\n" {
			t.Fatalf("stdout %q", out)
		}
		_, s := client(t, dsn)
		if _, err := s.Lock(ctx, "default", baton.Write, 0, "job"); err != nil {
			t.Fatal(err)
		}
		code, _, errs = run(t, dsn, "lock", "--write", "job", "--", "true")
		expect(t, code, errs, exitTimeout, "timeout")
		code, _, errs = run(t, dsn, "lock", "--write", "--timeout", "100ms", "other", "job", "--", "true")
		expect(t, code, errs, exitTimeout, "timeout")
		// The failed call took nothing: "other" is free.
		if _, err := s.Lock(ctx, "default", baton.Write, 0, "other"); err != nil {
			t.Fatalf("failed CLI call left a lock: %v", err)
		}
		code, _, errs = run(t, dsn, "lock", "--write", "", "--", "true")
		expect(t, code, errs, exitBadName, "name")
		code, _, errs = run(t, dsn, "lock", "--ns", strings.Repeat("n", 65), "--write", "a", "--", "true")
		expect(t, code, errs, exitBadName, "name")
		for _, args := range [][]string{
			{"lock", "--write", "--timeout", "soon", "a", "--", "true"},
			{"lock", "--write", "--timeout", "-5s", "a", "--", "true"},
			{"lock", "--write", "--timeout=-0.5", "a", "--", "true"},
			{"lock", "--write", "a", "--"},
			{"lock", "--write", "a"},
			{"lock", "--read", "--write", "a", "--", "true"},
			{"lock", "--bogus", "a", "--", "true"},
		} {
			code, _, errs = run(t, dsn, args...)
			expect(t, code, errs, exitUsage, "")
		}
		code, _, errs = run(t, dsn, "lock", "--write", "a", "--", "/nonexistent/cmd")
		expect(t, code, errs, 127, "not found")
	})
}

func TestLockCommandDeadlock(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		c, s := client(t, dsn)
		ctx := context.Background()
		if _, err := s.Lock(ctx, "default", baton.Write, 0, "b"); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var code int
		var errs string
		go func() {
			defer close(done)
			code, _, errs = run(t, dsn, "lock", "--read", "--timeout", "forever", "a", "b", "--", "true")
		}()
		// Wait until the CLI holds a and waits for b, then close the cycle.
		deadline := time.Now().Add(20 * time.Second)
		for {
			ls, _ := c.Locks(ctx)
			pending := false
			for _, l := range ls {
				if l.Name == "b" && l.Status == "PENDING" {
					pending = true
				}
			}
			if pending {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("CLI never waited")
			}
			time.Sleep(10 * time.Millisecond)
		}
		got := make(chan error, 1)
		go func() { _, err := s.Lock(ctx, "default", baton.Write, 20*time.Second, "a"); got <- err }()
		<-done
		expect(t, code, errs, exitDeadlock, "deadlock")
		if err := <-got; err != nil {
			t.Fatalf("the other session did not get its lock: %v", err)
		}
	})
}

func TestLockCommandLost(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		cmd := exec.Command(bin, "--dsn", dsn, "lock", "--write", "x", "--", "sh", "-c", "echo $BATON_SESSION; exec sleep 30")
		out, _ := cmd.StdoutPipe()
		var errb bytes.Buffer
		cmd.Stderr = &errb
		startBaton(t, cmd)
		line, _ := bufio.NewReader(out).ReadString('\n')
		id := strings.TrimSpace(line)
		if id == "" {
			t.Fatal("no session id")
		}
		batontest.ReapSession(t, dsn, id)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("wait: %v", err)
		}
		expect(t, ee.ExitCode(), errb.String(), exitLost, "lost")
	})
}

func TestLocksJSON(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		_, s := client(t, dsn)
		if _, err := s.Lock(context.Background(), "mon", baton.Read, 0, "x"); err != nil {
			t.Fatal(err)
		}
		out := runOK(t, dsn, "locks", "--json")
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if len(rows) != 1 {
			t.Fatalf("rows %v", rows)
		}
		for k, want := range map[string]string{"namespace": "mon", "name": "x", "mode": "SHARED", "status": "GRANTED", "session": s.ID()} {
			if rows[0][k] != want {
				t.Fatalf("%s = %v, want %v", k, rows[0][k], want)
			}
		}
		for _, k := range []string{"owner", "since"} {
			if rows[0][k] == "" || rows[0][k] == nil {
				t.Fatalf("%s missing in %v", k, rows[0])
			}
		}
		out = runOK(t, dsn, "locks")
		if !strings.Contains(out, "GRANTED") || !strings.Contains(out, "SHARED") {
			t.Fatalf("table %q", out)
		}
	})
}

func TestBadDSN(t *testing.T) {
	for dsn, want := range map[string]int{
		"nonsense":                          exitUsage,
		"postgres://nobody@127.0.0.1:1/x":   exitUnavailable,
		"mysql://root@127.0.0.1:1/x":        exitUnavailable,
		"sqlite:///nonexistent/dir/file.db": exitUnavailable,
	} {
		code, _, errs := run(t, dsn, "locks")
		expect(t, code, errs, want, "")
		if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Fatalf("%s: stderr not one line: %q", dsn, errs)
		}
	}
	code, _, errs := run(t, "sqlite::memory:", "migrate", "sideways")
	expect(t, code, errs, exitUsage, "")
}

func TestMigrate(t *testing.T) {
	dsn := batontest.SQLiteDSN(t)
	out := runOK(t, dsn, "migrate", "status")
	if !strings.Contains(out, "pending") {
		t.Fatalf("status before: %q", out)
	}
	out = runOK(t, dsn, "migrate")
	if strings.Contains(out, "pending") || !strings.Contains(out, "applied") {
		t.Fatalf("after: %q", out)
	}
}

// TestMigrateCreatesSchema: a PostgreSQL DSN whose search_path names a
// schema that does not exist fails with an error naming the schema and the
// fix, until `baton migrate` creates it (and says so).
func TestMigrateCreatesSchema(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label == "pgbouncer" {
			t.Skip("search_path cannot go through a transaction pooler (TestPoolerRefusesSearchPath)")
		}
		if b.Name != "postgres" {
			t.Skip("search_path schemas are PostgreSQL's")
		}
		u, err := url.Parse(b.NewDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		schema := q.Get("search_path") + "_New"
		q.Set("search_path", `"`+schema+`"`)
		u.RawQuery = q.Encode()
		dsn := u.String()
		db := batontest.SQLDB(t, dsn)
		t.Cleanup(func() { _, _ = db.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`) })

		code, _, errs := run(t, dsn, "queue", "push", "mail", "x")
		if code == 0 || !strings.Contains(errs, `"`+schema+`"`) || !strings.Contains(errs, "baton migrate") {
			t.Fatalf("push into a missing schema: exit %d, stderr %q: want a failure naming the schema and baton migrate", code, errs)
		}
		out := runOK(t, dsn, "migrate")
		if !strings.Contains(out, "created schema "+schema+"\n") {
			t.Fatalf("migrate did not say it created the schema:\n%s", out)
		}
		out = runOK(t, dsn, "migrate")
		if strings.Contains(out, "created schema") {
			t.Fatalf("second migrate created the schema again:\n%s", out)
		}
		runOK(t, dsn, "queue", "push", "mail", "x")
	})
}

// TestDemo: the README's first command runs every scenario and says so.
func TestDemo(t *testing.T) {
	cmd := exec.Command(bin, "demo")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "BATON_DSN=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{"deadlock", "no job was ever processed by two runners at once",
		"dead letters after 3 attempts: Message 5, Message 10, Message 15", "in insert order: true", "0 handled twice",
		"All scenarios ran as described"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(cmd.Dir); len(entries) != 0 {
		t.Fatalf("demo left files in the working directory: %v", entries)
	}
}

// TestBadDSNExitsUsage: what is wrong with the DSN (or the file it names,
// or the prefix) exits 64 with a message naming it, not 1.
func TestBadDSNExitsUsage(t *testing.T) {
	notDB := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notDB, []byte("hello, not a database at all, but long enough to have a header\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkExits(t, []exitCase{
		{[]string{"--dsn", "sqlite:" + filepath.Join(t.TempDir(), "x.db"), "--prefix", "x-y", "locks"}, exitUsage, "prefix"},
		{[]string{"--dsn", "sqlite:" + filepath.Join(t.TempDir(), "x.db"), "--prefix", "x-y", "migrate"}, exitUsage, "prefix"},
		{[]string{"--dsn", "sqlite:" + filepath.Join(t.TempDir(), "x.db"), "--prefix", "x-y", "uninstall"}, exitUsage, "prefix"},
		{[]string{"--dsn", "mysql://root@127.0.0.1:abc/test", "locks"}, exitUsage, "not a valid URL"},
		{[]string{"--dsn", "mysql://root@127.0.0.1:3306", "locks"}, exitUsage, "names no database"},
		{[]string{"--dsn", "sqlite:" + notDB, "locks"}, exitUsage, "not an SQLite database"},
		{[]string{"--dsn", "bogus://x", "locks"}, exitUsage, "bad DSN"},
	})
}

// TestBenchLocksCase: --case runs only the named cases, and a name that
// is no case exits 64 naming it, before anything is measured.
func TestBenchLocksCase(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	checkExits(t, []exitCase{
		{[]string{"--dsn", dsn, "bench", "locks", "--case", "lock_pair,no_such_case"}, exitUsage, `no case "no_such_case"`},
	})
	code, out, errs := run(t, dsn, "bench", "locks", "--json", "--duration", "200ms", "--case", "lock_pair", "--case", "multi10")
	if code != 0 {
		t.Fatalf("bench locks --case: exit %d: %s", code, errs)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct{ Name string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "lock_pair,multi10" {
		t.Fatalf("bench locks --case lock_pair --case multi10 ran %v", names)
	}
}

// TestPostgresConnectErrorNamesCause: a refused login is reported by its
// cause, once, not behind pgx's TLS attempt.
func TestPostgresConnectErrorNamesCause(t *testing.T) {
	u, err := url.Parse(batontest.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("no_such_role_baton")
	cmd := exec.Command(bin, "--dsn", u.String(), "locks")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	_ = cmd.Run()
	msg := errb.String()
	if strings.Count(msg, `role "no_such_role_baton" does not exist`) != 1 || strings.Contains(msg, "tls error") {
		t.Fatalf("connect error: %q", msg)
	}
}

// TestCommandExitStatuses: what the shell would say about CMD, baton says
// too, for baton lock and baton work: 127 not found, 126 not executable.
func TestCommandExitStatuses(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	noExec := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withDSN := func(args ...string) []string { return append([]string{"--dsn", dsn}, args...) }
	checkExits(t, []exitCase{
		{withDSN("lock", "--write", "a", "--", "/nonexistent/cmd"), exitNotFound, "not found"},
		{withDSN("lock", "--write", "a", "--", noExec), exitNoExec, "cannot be executed"},
		{withDSN("work", "q", "--drain", "--", "/nonexistent/cmd"), exitNotFound, "not found"},
		{withDSN("work", "q", "--drain", "--", noExec), exitNoExec, "cannot be executed"},
		{withDSN("work", "q", "--drain"), exitUsage, ""},
	})
}

// TestLockCommandWaitsAgain: a `baton lock` that waits has lost nothing when
// its session is lost (DESIGN: waiters carry on with new sessions): it
// says so, waits again with a new session, and runs CMD once the holder
// releases.
func TestLockCommandWaitsAgain(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		c, holder := client(t, dsn)
		ctx := context.Background()
		if _, err := holder.Lock(ctx, "default", baton.Write, 0, "x"); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--dsn", dsn, "lock", "--write", "x", "--timeout", "60s", "--", "echo", "ran")
		var outb, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &outb, &errb
		startBaton(t, cmd)
		pending := func() string {
			ls, err := c.Locks(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range ls {
				if l.Status == "PENDING" && l.Name == "x" {
					return l.Session
				}
			}
			return ""
		}
		var first string
		deadline := time.Now().Add(20 * time.Second)
		for first = pending(); first == ""; first = pending() {
			if time.Now().After(deadline) {
				t.Fatal("the baton lock waiter never showed up as PENDING")
			}
			time.Sleep(20 * time.Millisecond)
		}
		batontest.ReapSession(t, dsn, first)
		deadline = time.Now().Add(20 * time.Second)
		for s := pending(); s == "" || s == first; s = pending() {
			if time.Now().After(deadline) {
				t.Fatalf("no new session waits after the first was lost (stderr %q)", errb.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := holder.Release(ctx, "default"); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("baton lock: %v (stderr %q)", err, errb.String())
		}
		if strings.TrimSpace(outb.String()) != "ran" || !strings.Contains(errb.String(), "waiting again with a new session") {
			t.Fatalf("stdout %q, stderr %q: want CMD's output, and the wait again said", outb.String(), errb.String())
		}
	})
}

// TestDefaultDSN: without --dsn, baton uses $BATON_DSN, and without that the
// SQLite file baton.db in the current directory, created on first use.
func TestDefaultDSN(t *testing.T) {
	dir := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BATON_DSN=") {
			env = append(env, kv)
		}
	}
	push := func(env []string, payload string) {
		t.Helper()
		cmd := exec.Command(bin, "queue", "push", "dq", payload)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("baton queue push: %v: %s", err, out)
		}
	}
	push(env, "here")
	if _, err := os.Stat(filepath.Join(dir, "baton.db")); err != nil {
		t.Fatalf("no baton.db in the current directory: %v", err)
	}
	other := "sqlite://" + filepath.Join(dir, "other.db")
	push(append(env, "BATON_DSN="+other), "there")
	for dsn, want := range map[string]string{"sqlite://" + filepath.Join(dir, "baton.db"): "here", other: "there"} {
		code, out, errs := run(t, dsn, "queue", "list", "dq", "--json")
		if code != 0 || strings.Count(out, `"payload"`) != 1 || !strings.Contains(out, want) {
			t.Fatalf("%s: %d %q %q, want one message %q", dsn, code, out, errs, want)
		}
	}
}
