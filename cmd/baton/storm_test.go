package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/batontest"
)

// TestWorkKillStorm: `baton work` processes are killed with SIGKILL (the
// whole process group, handler included) again and again while they drain
// a queue, and replaced; afterwards every message has been handled, none is
// dead (no handler ever failed), and a message was handled more than once
// only if a kill could have interrupted it.
func TestWorkKillStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("kills worker processes for several seconds")
	}
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := b.NewDSN(t)
		c, _ := client(t, dsn)
		const n, kills, workers = 150, 15, 3
		for i := 0; i < n; i++ {
			if _, err := c.Enqueue(context.Background(), "storm", []byte(fmt.Sprintf("m%d\n", i))); err != nil {
				t.Fatal(err)
			}
		}
		dir := t.TempDir()
		file := filepath.Join(dir, "out")
		// A worker's stderr goes to a file of its own, and its exit is
		// watched, so a failure can say what the workers were doing.
		type worker struct {
			cmd    *exec.Cmd
			stderr string
			exited chan struct{}
		}
		started := 0
		start := func() *worker {
			// Each run appends "payload start-ns", the start on the
			// machine's clock, in one write.
			w := exec.Command(bin, "--dsn", dsn, "work", "storm", "--", "sh", "-c", `t=$(date +%s%N); sleep 0.02; echo "$(cat) $t" >> "$0"`, file)
			w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			started++
			errPath := filepath.Join(dir, fmt.Sprintf("worker%d.stderr", started))
			f, err := os.Create(errPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			w.Stderr = f
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			wk := &worker{cmd: w, stderr: errPath, exited: make(chan struct{})}
			go func() {
				_ = w.Wait()
				close(wk.exited)
			}()
			return wk
		}
		var running []*worker
		t.Cleanup(func() {
			for _, w := range running {
				_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
				<-w.exited
			}
		})
		// report describes the workers left running: whether each had
		// exited, and its stderr, with the goroutines of those still
		// running (SIGQUIT makes a Go program print them and exit).
		report := func() string {
			var b strings.Builder
			for _, w := range running {
				state := "running"
				select {
				case <-w.exited:
					state = "exited: " + w.cmd.ProcessState.String()
				default:
					_ = w.cmd.Process.Signal(syscall.SIGQUIT)
					select {
					case <-w.exited:
					case <-time.After(5 * time.Second):
					}
				}
				data, _ := os.ReadFile(w.stderr)
				if len(data) > 100000 {
					data = data[len(data)-100000:]
				}
				fmt.Fprintf(&b, "\nworker pid %d %s; stderr:\n%s", w.cmd.Process.Pid, state, data)
			}
			return b.String()
		}
		for i := 0; i < workers; i++ {
			running = append(running, start())
		}
		rng := rand.New(rand.NewSource(1))
		var killedAt []time.Time
		for k := 0; k < kills; k++ {
			time.Sleep(time.Duration(100+rng.Intn(200)) * time.Millisecond)
			i := rng.Intn(len(running))
			if err := syscall.Kill(-running[i].cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killedAt = append(killedAt, time.Now())
			<-running[i].exited
			running[i] = start()
		}
		var handled map[string]int
		var starts map[string][]time.Time
		deadline := time.Now().Add(60 * time.Second)
		for {
			data, _ := os.ReadFile(file)
			handled = map[string]int{}
			starts = map[string][]time.Time{}
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				p, ns, ok := strings.Cut(line, " ")
				if !ok {
					continue
				}
				handled[p]++
				if v, err := strconv.ParseInt(ns, 10, 64); err == nil {
					starts[p] = append(starts[p], time.Unix(0, v))
				}
			}
			st := statsOf(t, dsn, "storm")
			if len(handled) == n && st["ready"] == float64(0) && st["claimed"] == float64(0) {
				if st["dead"] != float64(0) {
					t.Fatalf("%v messages dead although no handler failed", st["dead"])
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the storm: %d of %d messages handled, stats %v%s", len(handled), n, st, report())
			}
			time.Sleep(100 * time.Millisecond)
		}
		again := 0
		for _, k := range handled {
			again += k - 1
		}
		// Each kill interrupts at most the one message its worker was
		// handling (concurrency 1); a message can be interrupted by more
		// than one kill.
		if again > kills {
			t.Fatalf("%d repeated deliveries for %d kills", again, kills)
		}
		// Redelivery: from the kill before a message's second run to
		// that run's start (a figure for docs/benchmarks.md, not a check).
		var gaps []time.Duration
		for _, ts := range starts {
			if len(ts) < 2 {
				continue
			}
			slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
			var kill time.Time
			for _, k := range killedAt {
				if k.Before(ts[1]) && k.After(ts[0]) {
					kill = k
				}
			}
			if !kill.IsZero() {
				gaps = append(gaps, ts[1].Sub(kill))
			}
		}
		slices.Sort(gaps)
		if len(gaps) > 0 {
			t.Logf("redelivery after SIGKILL: p50 %v, p90 %v, max %v (%d messages)", gaps[len(gaps)/2], gaps[len(gaps)*9/10], gaps[len(gaps)-1], len(gaps))
		}
		t.Logf("%d messages, %d kills, %d handled again", n, kills, again)
	})
}

// TestWorkMetrics: baton work --metrics serves the worker's own metrics.
func TestWorkMetrics(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "sqlite" {
			t.Skip("the flag does not depend on the backend (the metrics package's suite runs on every one)")
		}
		dsn := b.NewDSN(t)
		pushID(t, dsn, "", "mq", "one")
		w := exec.Command(bin, "--dsn", dsn, "work", "mq", "--metrics", "127.0.0.1:0", "--", "true")
		stderr, err := w.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.Process.Signal(syscall.SIGTERM); _ = w.Wait() }()
		line, err := bufio.NewReader(stderr).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		_, url, ok := strings.Cut(strings.TrimSpace(line), "metrics on ")
		if !ok {
			t.Fatalf("no metrics address on stderr: %q", line)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			body := ""
			if resp, err := http.Get(url); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body = string(b)
			}
			if strings.Contains(body, `baton_messages_processed_total{kind="",outcome="completed",queue="mq"} 1`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("metrics never counted the handled message:\n%s", body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestCommandDiesWithBaton: when baton itself is killed with SIGKILL, the
// command it runs is killed too (Linux's parent-death signal): a command
// never runs on after the session that holds its lock is gone, and a
// worker's command never handles a message being delivered again elsewhere.
func TestCommandDiesWithBaton(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	dsn := batontest.SQLiteDSN(t)
	pushID(t, dsn, "", "dq", "m")
	for _, args := range [][]string{
		{"lock", "--write", "job", "--", "sleep", "60"},
		{"work", "dq", "--", "sleep", "60"},
	} {
		b := exec.Command(bin, append([]string{"--dsn", dsn}, args...)...)
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		var child int
		for deadline := time.Now().Add(20 * time.Second); child == 0; {
			out, _ := exec.Command("pgrep", "-P", strconv.Itoa(b.Process.Pid), "sleep").Output()
			child, _ = strconv.Atoi(strings.TrimSpace(string(out)))
			if time.Now().After(deadline) {
				t.Fatalf("baton %s never started its command", args[0])
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := b.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = b.Wait()
		for deadline := time.Now().Add(20 * time.Second); syscall.Kill(child, 0) == nil; {
			if time.Now().After(deadline) {
				_ = syscall.Kill(child, syscall.SIGKILL)
				t.Fatalf("baton %s was killed but its command (pid %d) runs on", args[0], child)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
