package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/batontest"
)

// TestCornerExitStatuses: a bad DSN, an unknown command, a bad duration
// or grace exit 64 with a message naming the problem, not 1; durations
// need a unit on every flag.
func TestCornerExitStatuses(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	withDSN := func(args ...string) []string { return append([]string{"--dsn", dsn}, args...) }
	checkExits(t, []exitCase{
		{[]string{"--dsn", "sqlite:", "locks"}, exitUsage, "names no file"},
		{[]string{"--dsn", "sqlite:x.db?bad=1", "locks"}, exitUsage, "options after ?"},
		{[]string{"--dsn", batontest.PostgresDSN() + "?search_path=x'y", "locks"}, exitUsage, "search_path"},
		{[]string{"--dsn", batontest.PostgresDSN() + "?search_path=a;b", "queue", "push", "q", "x"}, exitUsage, "search_path"},
		{withDSN("bogus"), exitUsage, `unknown command "bogus"`},
		{withDSN("events", "bogus"), exitUsage, `unknown command "bogus"`},
		{withDSN("bench", "bogus"), exitUsage, `unknown command "bogus"`},
		{withDSN("lock", "--grace", "-1s", "--write", "a", "--", "true"), exitUsage, "--grace"},
		{withDSN("lock", "--timeout", "5", "--write", "a", "--", "true"), exitUsage, "needs a unit"},
		{withDSN("lock", "--timeout", "-1", "--write", "a", "--", "true"), exitUsage, "needs a unit"},
		{withDSN("lock", "--grace", "5", "--write", "a", "--", "true"), exitUsage, "needs a unit"},
		{withDSN("queue", "push", "q", "x", "--delay", "5"), exitUsage, "needs a unit"},
		{withDSN("work", "q", "--grace", "5", "--", "true"), exitUsage, "needs a unit"},
		{withDSN("bench", "locks", "--duration", "3"), exitUsage, "needs a unit"},
	})
	if entries, _ := os.ReadDir(filepath.Dir(strings.TrimPrefix(dsn, "sqlite:"))); len(entries) != 0 {
		t.Fatalf("refused commands left files: %v", entries)
	}
}

// TestPriorityRange: a priority outside the 32-bit range of the column is
// refused with exit 64 naming it on every backend; the bounds are kept.
func TestPriorityRange(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		for _, p := range []string{"2147483648", "-2147483649", "9223372036854775807"} {
			code, _, errs := run(t, dsn, "queue", "push", "q", "x", "--priority", p)
			expect(t, code, errs, exitUsage, "priority")
		}
		for _, p := range []int64{2147483647, -2147483648} {
			id := pushID(t, dsn, "", "q", "x", "--priority", strconv.FormatInt(p, 10))
			out := runOK(t, dsn, "queue", "get", strconv.FormatInt(id, 10), "--json")
			if !strings.Contains(out, `"priority": `+strconv.FormatInt(p, 10)) {
				t.Fatalf("priority %d: %s", p, out)
			}
		}
	})
}

// TestInterruptedExits130: SIGINT while baton connects (to a server that
// never answers) or runs the demo exits 130, not 69 or 1.
func TestInterruptedExits130(t *testing.T) {
	for name, args := range map[string][]string{
		"pg-locks": {"--dsn", "postgres://postgres@ADDR/test?connect_timeout=60", "locks"},
		"pg-lock":  {"--dsn", "postgres://postgres@ADDR/test?connect_timeout=60", "lock", "--write", "--timeout", "1m", "x", "--", "true"},
		"my-push":  {"--dsn", "mysql://root@ADDR/test?timeout=60s", "queue", "push", "q", "x"},
		"demo":     {"demo"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr, accepted := countingSilentServer(t)
			for i := range args {
				args[i] = strings.Replace(args[i], "ADDR", addr, 1)
			}
			cmd := exec.Command(bin, args...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "BATON_DSN=")
			var errb bytes.Buffer
			cmd.Stderr = &errb
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			startBaton(t, cmd)
			if name == "demo" {
				// Interrupted once it runs its scenarios.
				if _, err := out.Read(make([]byte, 1)); err != nil {
					t.Fatal(err)
				}
			} else {
				// Interrupted while it connects: the server accepted it.
				<-accepted
			}
			go func() { _, _ = out.Read(make([]byte, 1<<20)) }()
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			expect(t, waitExit(t, cmd, 15*time.Second), errb.String(), exitInterrupted, "interrupted")
		})
	}
}

// TestLongNamesCut: a 10,000-character name is not echoed whole in the
// error; the error says how long it was.
func TestLongNamesCut(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	long := strings.Repeat("n", 10000)
	for _, args := range [][]string{
		{"lock", "--write", long, "--", "true"},
		{"lock", "--ns", long, "--write", "a", "--", "true"},
		{"queue", "push", long, "x"},
		{"queue", "push", "q", "x", "--kind", long},
		{"notify", long, "x"},
		{"events", "subscribe", long, "--name", "s", "--on", "insert"},
		{"events", "subscribe", "t", "--name", long, "--on", "insert"},
	} {
		code, _, errs := run(t, dsn, args...)
		if code == 0 || len(errs) > 400 || !strings.Contains(errs, "10000 bytes in all") {
			t.Errorf("baton %s …: exit %d, %d bytes on stderr (%.120q…): want a failure naming the length, not the whole name",
				args[0], code, len(errs), errs)
		}
	}
}
