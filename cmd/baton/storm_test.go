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

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestWorkKillStorm: `baton work` processes are killed with SIGKILL (the
// whole process group, handler included) again and again while they drain
// a queue, and replaced; afterwards every message has been handled, unless
// kills stopped its runs as often as its attempt limit (3): no message is
// dead-lettered by kills alone; a message was handled more than once only
// if a kill could have interrupted it, and kills charged attempts only for
// runs that started (see killStorm).
func TestWorkKillStorm(t *testing.T) {
	killStorm(t, stormConfig{messages: 150, kills: 15, workers: 3, concurrency: 1, handler: 20 * time.Millisecond, maxAttempts: 3,
		gap: func(rng *rand.Rand) time.Duration { return time.Duration(100+rng.Intn(200)) * time.Millisecond }})
}

// TestWorkKillRedelivery: the storm with slow handlers (2 s, four per
// worker), where a surviving worker is busy when a killed one's messages
// come back: they are delivered again by whichever worker has a free
// handler (workers claim nothing ahead of their handlers), and the
// redelivery latency, from the kill to the next start of an interrupted
// message, is logged (p90; docs/benchmarks.md; not a check: the machine's
// load decides it). Every property of TestWorkKillStorm holds, with the
// default attempt limit: a message whose runs are stopped by kill after
// kill (four handlers' worth of messages per kill, handed on to the next
// free handler, which may be the next victim's) is not dead after 3.
func TestWorkKillRedelivery(t *testing.T) {
	killStorm(t, stormConfig{messages: 36, kills: 4, workers: 3, concurrency: 4, handler: 2 * time.Second, maxAttempts: baton.DefaultMaxAttempts,
		gap: func(rng *rand.Rand) time.Duration { return time.Duration(1200+rng.Intn(600)) * time.Millisecond }})
}

// stormConfig shapes a killStorm.
type stormConfig struct {
	messages, kills, workers, concurrency int
	maxAttempts                           int                            // of every message
	handler                               time.Duration                  // how long each run takes
	gap                                   func(*rand.Rand) time.Duration // between kills
}

// killStorm enqueues cfg.messages messages (attempt limit
// cfg.maxAttempts), runs cfg.workers `baton work` processes, kills the
// oldest (SIGKILL, its process group) cfg.kills times and replaces it, and
// waits for the queue to settle. Each run writes a line when its command starts (with
// BATON_ATTEMPT) and one when it ends. Then:
//   - every message completed (its command ended) or is a dead letter
//     whose every attempt ended with its session, as many as its attempt
//     limit: no message is dead-lettered by anything but kills;
//   - attempts count runs that started: the final attempt counts exceed
//     the starts seen only by runs a kill stopped between their start in
//     baton and their command's first line, at most cfg.concurrency per
//     kill, and each run saw BATON_ATTEMPT at least its rank;
//   - a message runs again only after the worker of its last run was
//     killed, and runs interrupted are at most the runs kills could
//     interrupt (a run again after one that ended is an acknowledgement
//     the kill lost, which at least once allows).
func killStorm(t *testing.T, cfg stormConfig) {
	if testing.Short() {
		t.Skip("kills worker processes for several seconds")
	}
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		c, _ := client(t, dsn)
		for i := 0; i < cfg.messages; i++ {
			if _, err := c.Enqueue(context.Background(), "storm", []byte(fmt.Sprintf("m%d\n", i)), baton.EnqueueOptions{MaxAttempts: cfg.maxAttempts}); err != nil {
				t.Fatal(err)
			}
		}
		dir := t.TempDir()
		file := filepath.Join(dir, "out")
		// A worker's stderr goes to a file of its own, and its exit is
		// watched, so a failure can say what the workers were doing.
		type worker struct {
			n      int // STORM_WORKER
			cmd    *exec.Cmd
			stderr string
			exited chan struct{}
		}
		started := 0
		sleep := strconv.FormatFloat(cfg.handler.Seconds(), 'f', -1, 64)
		start := func() *worker {
			// Each run appends "payload start-ns attempt worker" as it
			// starts (on the machine's clock) and "payload end attempt"
			// once done, each line in one write. The start line uses bash builtins only
			// (read, EPOCHREALTIME): a kill between baton's start of the
			// run and that line, which the checks below allow for, then
			// has the window of bash's own start only, not of a cat and
			// a date process besides.
			w := exec.Command(bin, "--dsn", dsn, "work", "storm", "--concurrency", strconv.Itoa(cfg.concurrency), "--",
				"bash", "-c", `read -r p; echo "$p ${EPOCHREALTIME/./}000 $BATON_ATTEMPT $STORM_WORKER" >> "$0"; sleep `+sleep+`; echo "$p end $BATON_ATTEMPT" >> "$0"`, file)
			w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			started++
			w.Env = append(os.Environ(), fmt.Sprintf("STORM_WORKER=%d", started))
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
			wk := &worker{n: started, cmd: w, stderr: errPath, exited: make(chan struct{})}
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
		for i := 0; i < cfg.workers; i++ {
			running = append(running, start())
		}
		rng := rand.New(rand.NewSource(1))
		var killedAt []time.Time
		killed := map[int]time.Time{} // worker number -> when it was gone
		for k := 0; k < cfg.kills; k++ {
			time.Sleep(cfg.gap(rng))
			// The oldest worker: the messages a kill interrupts go to
			// the idle replacement, which is killed last, so that a
			// message's runs are rarely stopped by kill after kill.
			i := k % len(running)
			if err := syscall.Kill(-running[i].cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killedAt = append(killedAt, time.Now())
			// kill(2) returns before the process is gone: a run it
			// started may still write its first line until then.
			<-running[i].exited
			killed[running[i].n] = time.Now()
			running[i] = start()
		}
		type run struct {
			at      time.Time
			attempt int
			worker  int
		}
		var runs map[string][]run
		var ended map[string]bool
		var endedRun map[string]bool // "payload attempt": that run ended
		deadline := time.Now().Add(60 * time.Second)
		for {
			// The stats first: every message they count finished has
			// written its lines by then.
			st := statsOf(t, dsn, "storm")
			data, _ := os.ReadFile(file)
			runs, ended, endedRun = map[string][]run{}, map[string]bool{}, map[string]bool{}
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				switch f := strings.Fields(line); {
				case len(f) == 3 && f[1] == "end":
					ended[f[0]] = true
					a, _ := strconv.Atoi(f[2])
					endedRun[f[0]+" "+f[2]] = a > 0
				case len(f) == 4:
					ns, _ := strconv.ParseInt(f[1], 10, 64)
					a, _ := strconv.Atoi(f[2])
					wn, _ := strconv.Atoi(f[3])
					runs[f[0]] = append(runs[f[0]], run{time.Unix(0, ns), a, wn})
				}
			}
			if st["completed"].(float64)+st["dead"].(float64) == float64(cfg.messages) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the storm: %d of %d messages handled, stats %v%s", len(ended), cfg.messages, st, report())
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Each kill interrupts at most the messages its worker was
		// handling, and can stop a run that baton started before its
		// command wrote its first line: that run is charged, rightly,
		// but not seen here.
		// A run again after one that ended is an acknowledgement that the
		// kill lost (the worker had claimed its next message meanwhile):
		// at least once allows it, and it is counted apart.
		interruptible := cfg.kills * cfg.concurrency
		again, unacked := 0, 0
		for p, rs := range runs {
			slices.SortFunc(rs, func(a, b run) int { return a.at.Compare(b.at) })
			for i, r := range rs {
				if r.attempt < i+1 {
					t.Errorf("message %s: run %d saw BATON_ATTEMPT %d", p, i+1, r.attempt)
				}
				if i == 0 {
					continue
				}
				// Run again only once the worker of the run before
				// was killed: never while it lived.
				prev := rs[i-1]
				if k, ok := killed[prev.worker]; !ok || k.Before(prev.at) || k.After(r.at) {
					data, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("worker%d.stderr", prev.worker)))
					t.Errorf("message %s: run %d (attempt %d, worker %d) started %v after run %d (worker %d, ended %v), whose worker was not killed in between (killed %v, %v after run %d started); its stderr:\n%s",
						p, i+1, r.attempt, r.worker, r.at.Sub(prev.at), i, prev.worker, endedRun[fmt.Sprintf("%s %d", p, prev.attempt)], ok, k.Sub(prev.at), i, data)
				}
				if endedRun[fmt.Sprintf("%s %d", p, prev.attempt)] {
					unacked++
				} else {
					again++
				}
			}
		}
		if again > interruptible {
			t.Errorf("%d runs interrupted and run again for %d kills of workers running %d at a time", again, cfg.kills, cfg.concurrency)
		}
		// The final attempt counts, from the history, against the runs.
		unseen, dead := 0, 0
		for _, state := range []baton.MessageState{baton.StateCompleted, baton.StateDead} {
			for after := ""; ; {
				ms, next, err := c.ListMessages(context.Background(), baton.ListOptions{Queue: "storm", State: state, After: after, Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range ms {
					p := strings.TrimSpace(string(m.Payload))
					unseen += m.Attempt - len(runs[p])
					if state == baton.StateDead {
						dead++
						// Every attempt a run that a kill stopped: its
						// session ended. Any of them may have been
						// stopped before its first line (counted in
						// unseen, below).
						ended := 0
						for _, e := range m.Errors {
							if strings.Contains(e.Error, "session ended") {
								ended++
							}
						}
						if m.Attempt != m.MaxAttempts || ended != m.Attempt {
							t.Errorf("message %s dead-lettered after %d attempts (limit %d), %d of them ended by their session's end; %d runs seen: %+v",
								p, m.Attempt, m.MaxAttempts, ended, len(runs[p]), m.Errors)
						}
					} else if !ended[p] {
						t.Errorf("message %s completed, but no run of its command ended", p)
					}
				}
				if after = next; next == "" {
					break
				}
			}
		}
		if unseen > interruptible {
			t.Errorf("kills charged attempts to runs that never started: the attempt counts are %d ahead of the runs seen; at most %d runs (kills × concurrency) could have started unseen",
				unseen, interruptible)
		}
		// Redelivery: from the kill before a message's second run to
		// that run's start (a figure for docs/benchmarks.md, not a check).
		var gaps []time.Duration
		for _, rs := range runs {
			if len(rs) < 2 {
				continue
			}
			var kill time.Time
			for _, k := range killedAt {
				if k.Before(rs[1].at) && k.After(rs[0].at) {
					kill = k
				}
			}
			if !kill.IsZero() {
				gaps = append(gaps, rs[1].at.Sub(kill))
			}
		}
		slices.Sort(gaps)
		if len(gaps) > 0 {
			t.Logf("redelivery after SIGKILL: p50 %v, p90 %v, max %v (%d messages; lease 3s)", gaps[len(gaps)/2], gaps[len(gaps)*9/10], gaps[len(gaps)-1], len(gaps))
		}
		t.Logf("%d messages, %d kills, %d runs again (%d more after an acknowledgement lost), %d charged runs unseen, %d dead (their runs stopped by kills as often as the attempt limit, %d)", cfg.messages, cfg.kills, again, unacked, unseen, dead, cfg.maxAttempts)
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
