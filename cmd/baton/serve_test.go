package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeCommand: baton serve refuses a non-loopback address without a
// token (exit 64), serves the dashboard and /metrics on loopback, and stops
// gracefully on SIGTERM (exit 0).
func TestServeCommand(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "s.db")
	code, _, errs := run(t, dsn, "serve", "--addr", "0.0.0.0:0")
	expect(t, code, errs, 64, "not a loopback address: give --token")
	code, _, errs = run(t, dsn, "serve", "--addr", "nonsense")
	expect(t, code, errs, 64, "--addr")
	pushID(t, dsn, "", "served", "x")

	s := exec.Command(bin, "--dsn", dsn, "serve", "--addr", "127.0.0.1:0")
	stderr, err := s.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Process.Kill() }()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(line, "dashboard on ")
	if !ok {
		t.Fatalf("no address on stderr: %q", line)
	}
	base := strings.TrimSuffix(strings.Fields(rest)[0], "/")
	for path, want := range map[string]string{"/": `data-queue="served"`, "/metrics": `baton_queue_messages{queue="served",state="ready"} 1`} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Fatalf("GET %s: %d, lacks %q", path, resp.StatusCode, want)
		}
	}
	if err := s.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expect(t, waitExit(t, s, 15*time.Second), "", 0, "")
}

// TestQueueControlCommands: pause/resume, retry and delete of one message,
// with their exit statuses.
func TestQueueControlCommands(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "c.db")
	id := pushID(t, dsn, "", "cq", "x", "--delay", "1h")
	code, _, errs := run(t, dsn, "queue", "pause", "cq")
	expect(t, code, errs, 0, "")
	code, out, errs := run(t, dsn, "queue", "stats")
	expect(t, code, errs, 0, "")
	if !strings.Contains(out, "cq (paused)") {
		t.Fatalf("stats do not show the paused queue:\n%s", out)
	}
	code, _, errs = run(t, dsn, "queue", "resume", "cq")
	expect(t, code, errs, 0, "")
	code, _, errs = run(t, dsn, "queue", "pause", "nope")
	expect(t, code, errs, 64, "unknown queue")
	code, _, errs = run(t, dsn, "queue", "retry", "cq", fmt.Sprint(id))
	expect(t, code, errs, 0, "")
	if st := statsOf(t, dsn, "cq"); st["ready"] != float64(1) || st["scheduled"] != float64(0) {
		t.Fatalf("after retry: %v", st)
	}
	code, _, errs = run(t, dsn, "queue", "delete", "cq", fmt.Sprint(id))
	expect(t, code, errs, 0, "")
	code, _, errs = run(t, dsn, "queue", "delete", "cq", fmt.Sprint(id))
	expect(t, code, errs, 66, "no waiting message")
	code, _, errs = run(t, dsn, "queue", "retry", "cq", "x")
	expect(t, code, errs, 64, "positive number")

	// Unique keys and handler timeouts.
	first := pushID(t, dsn, "", "uq", "a", "--unique", "k1")
	code, out, errs = run(t, dsn, "queue", "push", "uq", "b", "--unique", "k1")
	if code != 0 || strings.TrimSpace(out) != fmt.Sprint(first) || !strings.Contains(errs, "not added") {
		t.Fatalf("duplicate push: %d %q %q, want the first id %d and a note", code, out, errs, first)
	}
	pushID(t, dsn, "", "tq", "slow", "--timeout", "100ms")
	code, _, errs = run(t, dsn, "work", "tq", "--drain", "--", "sleep", "30")
	expect(t, code, errs, 0, "ran longer than its timeout 100ms")
	if st := statsOf(t, dsn, "tq"); st["scheduled"] != float64(1) {
		t.Fatalf("the timed-out message is not backing off: %v", st)
	}
}
