package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestServeCommand: baton serve refuses a non-loopback address without a
// token (exit 64), serves the dashboard and /metrics on loopback, and stops
// gracefully on SIGTERM (exit 0).
func TestServeCommand(t *testing.T) {
	dsn := batontest.SQLiteDSN(t)
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
	stopGracefully(t, s)
}

// TestQueueControlCommands: pause/resume, retry and delete of one message,
// with their exit statuses.
func TestQueueControlCommands(t *testing.T) {
	dsn := batontest.SQLiteDSN(t)
	id := pushID(t, dsn, "", "cq", "x", "--delay", "1h")
	runOK(t, dsn, "queue", "pause", "cq")
	out := runOK(t, dsn, "queue", "stats")
	if !strings.Contains(out, "cq (paused)") {
		t.Fatalf("stats do not show the paused queue:\n%s", out)
	}
	runOK(t, dsn, "queue", "resume", "cq")
	code, _, errs := run(t, dsn, "queue", "pause", "nope")
	expect(t, code, errs, exitNoQueue, "no queue nope")
	runOK(t, dsn, "queue", "retry", "cq", fmt.Sprint(id))
	if st := statsOf(t, dsn, "cq"); st["ready"] != float64(1) || st["scheduled"] != float64(0) {
		t.Fatalf("after retry: %v", st)
	}
	runOK(t, dsn, "queue", "delete", "cq", fmt.Sprint(id))
	code, _, errs = run(t, dsn, "queue", "delete", "cq", fmt.Sprint(id))
	expect(t, code, errs, 66, "no message")
	code, _, errs = run(t, dsn, "queue", "retry", "cq", "x")
	expect(t, code, errs, 64, "positive number")

	// Unique keys and handler timeouts.
	first := pushID(t, dsn, "", "uq", "a", "--unique-key", "k1")
	code, out, errs = run(t, dsn, "queue", "push", "uq", "b", "--unique-key", "k1")
	if code != 0 || strings.TrimSpace(out) != fmt.Sprint(first)+" duplicate" {
		t.Fatalf("duplicate push: %d %q %q, want the first id %d and the word duplicate", code, out, errs, first)
	}
	code, out, errs = run(t, dsn, "queue", "push", "uq", "c", "--unique-key", "k1", "--unique-states", "running,completed")
	if code != 0 || strings.Contains(out, "duplicate") || strings.TrimSpace(out) == fmt.Sprint(first) {
		t.Fatalf("push of a key whose holder is ready, with --unique-states running,completed: %d %q %q, want a new message", code, out, errs)
	}
	code, _, errs = run(t, dsn, "queue", "push", "uq", "d", "--unique-key", "k2", "--unique-states", "done")
	expect(t, code, errs, 64, `unique state "done"`)
	// --unique-for: one message per key and period, even once the holder
	// is gone (a push that straddles the day's end starts a new period:
	// try again).
	for try := 0; ; try++ {
		day := time.Now().UTC().Truncate(24 * time.Hour)
		held := pushID(t, dsn, "", "uq", "e", "--unique-key", "k3", "--unique-for", "24h")
		runOK(t, dsn, "queue", "delete", "uq", fmt.Sprint(held))
		code, out, errs = run(t, dsn, "queue", "push", "uq", "f", "--unique-key", "k3", "--unique-for", "24h")
		if !time.Now().UTC().Truncate(24*time.Hour).Equal(day) && try == 0 {
			continue
		}
		if code != 0 || strings.TrimSpace(out) != fmt.Sprint(held)+" duplicate" {
			t.Fatalf("push of a key held for the day, its holder deleted: %d %q %q, want %d duplicate", code, out, errs, held)
		}
		break
	}
	pushID(t, dsn, "", "tq", "slow", "--timeout", "100ms")
	code, _, errs = run(t, dsn, "work", "tq", "--drain", "--", "sleep", "30")
	expect(t, code, errs, 0, "ran longer than its timeout 100ms")
	if st := statsOf(t, dsn, "tq"); st["retrying"] != float64(1) {
		t.Fatalf("the timed-out message is not backing off: %v", st)
	}
}

// TestQueueJobCommands: list, get and cancel messages by id, on every
// backend; retry and delete by id alone; the exit statuses of unknown and
// finished messages.
func TestQueueJobCommands(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		later := pushID(t, dsn, "", "jq", "later", "--delay", "1h", "--kind", "report")
		now := pushID(t, dsn, "", "jq", "now")
		pushID(t, dsn, "", "other", "x")
		out := runOK(t, dsn, "queue", "list", "jq", "--json")
		var ms []baton.MessageInfo
		if err := json.Unmarshal([]byte(out), &ms); err != nil {
			t.Fatalf("list --json: %v: %s", err, out)
		}
		if len(ms) != 2 || ms[0].ID != later || ms[0].State != baton.StateScheduled || ms[0].Kind != "report" ||
			ms[1].ID != now || ms[1].State != baton.StateReady || string(ms[1].Payload) != "now" {
			t.Fatalf("list: %+v", ms)
		}
		out = runOK(t, dsn, "queue", "list", "--kind", "report", "--limit", "1")
		if !strings.Contains(out, fmt.Sprint(later)) || !strings.Contains(out, "scheduled") || strings.Contains(out, "other") {
			t.Fatalf("list --kind report:\n%s", out)
		}
		code, _, errs := run(t, dsn, "queue", "list", "--state", "finished")
		expect(t, code, errs, 64, "message state")

		runOK(t, dsn, "queue", "cancel", fmt.Sprint(later))
		out = runOK(t, dsn, "queue", "get", fmt.Sprint(later), "--json")
		var m baton.MessageInfo
		if err := json.Unmarshal([]byte(out), &m); err != nil || m.State != baton.StateCancelled || m.FinishedAt.IsZero() {
			t.Fatalf("get after cancel: %+v %v: %s", m, err, out)
		}
		code, _, errs = run(t, dsn, "queue", "cancel", fmt.Sprint(later))
		expect(t, code, errs, 65, "already finished")
		// A finished message is retried under its own id.
		runOK(t, dsn, "queue", "retry", fmt.Sprint(later))
		out = runOK(t, dsn, "queue", "get", fmt.Sprint(later), "--json")
		var r baton.MessageInfo
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.ID != later || r.State != baton.StateReady || !r.FinishedAt.IsZero() {
			t.Fatalf("get after retrying the cancelled message: %+v %v: %s", r, err, out)
		}
		runOK(t, dsn, "queue", "cancel", fmt.Sprint(later))
		code, _, errs = run(t, dsn, "queue", "get", "99999")
		expect(t, code, errs, 66, "no message 99999")
		code, _, errs = run(t, dsn, "queue", "cancel", "x")
		expect(t, code, errs, 64, "positive number")

		runOK(t, dsn, "queue", "delete", fmt.Sprint(now))
		code, _, errs = run(t, dsn, "queue", "get", fmt.Sprint(now))
		expect(t, code, errs, 66, "no message")
		out = runOK(t, dsn, "queue", "get", fmt.Sprint(later))
		if !strings.Contains(out, "cancelled") || !strings.Contains(out, "report") {
			t.Fatalf("get:\n%s", out)
		}

		// baton work --kind takes one kind and leaves the others.
		a := pushID(t, dsn, "", "kq", "1", "--kind", "a")
		b2 := pushID(t, dsn, "", "kq", "2", "--kind", "b")
		out = runOK(t, dsn, "work", "kq", "--kind", "a", "--drain", "--", "sh", "-c", "echo $BATON_KIND")
		if strings.TrimSpace(out) != "a" {
			t.Fatalf("work --kind a ran for: %q", out)
		}
		for id, want := range map[int64]string{a: "completed", b2: "ready"} {
			out = runOK(t, dsn, "queue", "get", fmt.Sprint(id), "--json")
			var m baton.MessageInfo
			if err := json.Unmarshal([]byte(out), &m); err != nil || string(m.State) != want {
				t.Fatalf("message %d after work --kind a: %s %v, want %s", id, out, err, want)
			}
		}
		code, _, errs = run(t, dsn, "work", "kq", "--kind", "a", "--ordered", "--", "true")
		expect(t, code, errs, 64, "--kind")
	})
}

// TestQueueCancelRunningCommand: baton queue cancel stops the command a
// baton work process runs for the message (another process), and the
// message ends cancelled, not retried, as the worker says on stderr.
func TestQueueCancelRunningCommand(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		id := pushID(t, dsn, "", "long", "x")
		w := exec.Command(bin, "--dsn", dsn, "work", "long", "--visibility", "1m", "--", "sh", "-c", "echo started; exec sleep 60")
		var stderr bytes.Buffer
		w.Stderr = &stderr
		out, err := w.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "started\n" {
			t.Fatalf("the command printed %q", line)
		}
		runOK(t, dsn, "queue", "cancel", fmt.Sprint(id))
		deadline := time.Now().Add(15 * time.Second) // well before a lease renewal (20s)
		for {
			stdout := runOK(t, dsn, "queue", "get", fmt.Sprint(id), "--json")
			var m baton.MessageInfo
			if err := json.Unmarshal([]byte(stdout), &m); err != nil {
				t.Fatal(err)
			}
			if m.State == baton.StateCancelled {
				if m.Attempt != 1 || len(m.Errors) != 1 || !strings.Contains(m.Errors[0].Error, "cancelled") {
					t.Fatalf("cancelled message: %+v", m)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the message is still %s", m.State)
			}
			time.Sleep(50 * time.Millisecond)
		}
		stopGracefully(t, w)
		if say := stderr.String(); !strings.Contains(say, "it ends cancelled") || strings.Contains(say, "retrying") {
			t.Fatalf("the worker's stderr does not say the message ends cancelled:\n%s", say)
		}
	})
}
