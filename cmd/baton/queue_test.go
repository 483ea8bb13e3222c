package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// runWith is run with standard input and extra environment variables.
func runWith(t *testing.T, dsn, stdin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	return runArgs(t, stdin, env, append([]string{"--dsn", dsn}, args...)...)
}

// runArgs executes the CLI with these arguments (no --dsn added), standard
// input and extra environment variables, and returns its exit status,
// stdout and stderr.
func runArgs(t *testing.T, stdin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("run: %v", err)
	return 0, "", ""
}

// pushID pushes a message with the CLI and returns its id.
func pushID(t *testing.T, dsn, stdin string, args ...string) int64 {
	t.Helper()
	code, out, errs := runWith(t, dsn, stdin, nil, append([]string{"queue", "push"}, args...)...)
	expect(t, code, errs, 0, "")
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		t.Fatalf("push printed %q, not an id", out)
	}
	return id
}

// statsOf runs `baton queue stats QUEUE --json`.
func statsOf(t *testing.T, dsn, queue string) map[string]any {
	t.Helper()
	out := runOK(t, dsn, "queue", "stats", queue, "--json")
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stats --json: %v: %q", err, out)
	}
	return st
}

// wantCounts checks ready, scheduled, claimed and dead of a stats object.
func wantCounts(t *testing.T, st map[string]any, ready, scheduled, claimed, dead float64) {
	t.Helper()
	got := []any{st["ready"], st["scheduled"], st["claimed"], st["dead"]}
	if !slices.Equal(got, []any{ready, scheduled, claimed, dead}) {
		t.Fatalf("stats %v: want ready %v, scheduled %v, claimed %v, dead %v", st, ready, scheduled, claimed, dead)
	}
}

func TestQueueCommands(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		ctx := context.Background()
		id1 := pushID(t, dsn, "", "q", "one")
		id2 := pushID(t, dsn, "two", "q", "-", "--priority", "-1", "--key", "k", "--max-attempts", "3")
		id3 := pushID(t, dsn, "three", "q", "--delay", "1h")
		if id1 == id2 || id2 == id3 || id1 == id3 {
			t.Fatalf("ids %d %d %d", id1, id2, id3)
		}
		st := statsOf(t, dsn, "q")
		if st["queue"] != "q" {
			t.Fatalf("stats %v", st)
		}
		wantCounts(t, st, 2, 1, 0, 0)
		for _, k := range []string{"retrying", "completed", "cancelled"} {
			if st[k] != 0.0 {
				t.Fatalf("%s in %v, want 0", k, st)
			}
		}
		if ns, ok := st["oldest_ready_ns"].(float64); !ok || ns < 0 {
			t.Fatalf("oldest_ready_ns in %v", st)
		}
		out := runOK(t, dsn, "queue", "stats", "--json")
		var all []map[string]any
		if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 1 || all[0]["queue"] != "q" || all[0]["ready"] != 2.0 {
			t.Fatalf("stats --json of all: %v: %s", err, out)
		}
		out = runOK(t, dsn, "queue", "stats")
		if !strings.Contains(out, "READY") || !strings.Contains(out, "RETRYING") || !strings.Contains(out, "CANCELLED") || !strings.Contains(out, "\nq ") {
			t.Fatalf("stats table %q", out)
		}
		code, _, errs := run(t, dsn, "queue", "stats", "nope")
		expect(t, code, errs, exitNoQueue, "no queue nope")
		code, _, errs = run(t, dsn, "queue", "redrive", "nope")
		expect(t, code, errs, exitNoQueue, "no queue nope")

		// Two dead letters, made by a consumer.
		_, s := client(t, dsn)
		fail := func() {
			t.Helper()
			ms, err := s.Claim(ctx, "q", baton.ClaimOptions{Max: 5})
			if err != nil || len(ms) != 2 {
				t.Fatalf("claim: %d messages, %v", len(ms), err)
			}
			for _, m := range ms {
				if err := s.Fail(ctx, m, "broken\nsecond line"); err != nil {
					t.Fatal(err)
				}
			}
		}
		ms, err := s.Claim(ctx, "q", baton.ClaimOptions{Max: 1})
		if err != nil {
			t.Fatal(err)
		}
		if m := ms[0]; m.ID != id2 || string(m.Payload) != "two" || m.Key != "k" || m.MaxAttempts != 3 || m.Priority != -1 {
			t.Fatalf("first claimed %+v, want message %d with its options", m, id2)
		}
		if err := s.Fail(ctx, ms[0], "broken\nsecond line"); err != nil {
			t.Fatal(err)
		}
		ms, err = s.Claim(ctx, "q", baton.ClaimOptions{Max: 5})
		if err != nil || len(ms) != 1 || ms[0].ID != id1 || ms[0].MaxAttempts != baton.DefaultMaxAttempts {
			t.Fatalf("second claim: %v, %v", ms, err)
		}
		if err := s.Fail(ctx, ms[0], "broken\nsecond line"); err != nil {
			t.Fatal(err)
		}
		wantCounts(t, statsOf(t, dsn, "q"), 0, 1, 0, 2)

		out = runOK(t, dsn, "queue", "dead", "q", "--json")
		var dead []map[string]any
		if err := json.Unmarshal([]byte(out), &dead); err != nil || len(dead) != 2 {
			t.Fatalf("dead --json: %v: %s", err, out)
		}
		var ids []int64
		for _, d := range dead {
			ids = append(ids, int64(d["id"].(float64)))
			if d["error"] != "broken\nsecond line" || d["attempts"] != 1.0 || d["queue"] != "q" || d["failed_at"] == nil {
				t.Fatalf("dead letter %v", d)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []int64{min(id1, id2), max(id1, id2)}) {
			t.Fatalf("dead ids %v, want %d and %d", ids, id1, id2)
		}
		out = runOK(t, dsn, "queue", "dead", "q", "--limit", "1", "--json")
		if err := json.Unmarshal([]byte(out), &dead); err != nil || len(dead) != 1 {
			t.Fatalf("dead --limit 1: %v: %s", err, out)
		}
		out = runOK(t, dsn, "queue", "dead", "q")
		if !strings.Contains(out, "FAILED AT") || !strings.Contains(out, "broken") || strings.Contains(out, "second line") ||
			!strings.Contains(out, "two") || !strings.Contains(out, "1/3") {
			t.Fatalf("dead table %q", out)
		}

		out = runOK(t, dsn, "queue", "redrive", "q")
		if strings.TrimSpace(out) != "2" {
			t.Fatalf("redrive printed %q, want 2", out)
		}
		wantCounts(t, statsOf(t, dsn, "q"), 2, 1, 0, 0)

		fail()
		out = runOK(t, dsn, "queue", "purge", "q")
		if strings.TrimSpace(out) != "2" {
			t.Fatalf("purge printed %q, want 2", out)
		}
		wantCounts(t, statsOf(t, dsn, "q"), 0, 1, 0, 0)
		out = runOK(t, dsn, "queue", "dead", "q", "--json")
		if strings.TrimSpace(out) != "[]" {
			t.Fatalf("dead after purge: %q", out)
		}
		out = runOK(t, dsn, "queue", "purge", "q")
		if strings.TrimSpace(out) != "0" {
			t.Fatalf("second purge printed %q, want 0", out)
		}
	})
}

func TestQueuePushBadInput(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		big := strings.Repeat("x", baton.MaxMessagePayload+1)
		for _, c := range []struct {
			stdin string
			args  []string
			word  string
		}{
			{"", []string{"fresh", "x", "--delay", "-1s"}, "delay"},
			{"", []string{"fresh", "x", "--delay", "soon"}, "delay"},
			{"", []string{"fresh", "x", "--priority", "high"}, "priority"},
			{"", []string{"fresh", "x", "--max-attempts", "0"}, "max-attempts"},
			{"", []string{"fresh", ""}, "empty payload"},
			{"", []string{"fresh"}, "empty payload"},
			{"", []string{"fresh", "-"}, "empty payload"},
			{big, []string{"fresh", "-"}, "payload"},
			{"", []string{"bad queue!", "x"}, "queue"},
			{"", []string{strings.Repeat("q", 65), "x"}, "queue"},
			{"", []string{"fresh", "x", "--key", strings.Repeat("k", 256)}, "key"},
			{"", []string{"fresh", "x", "extra"}, "too many"},
			{"", nil, "missing"},
		} {
			code, out, errs := runWith(t, dsn, c.stdin, nil, append([]string{"queue", "push"}, c.args...)...)
			if len(c.args) > 1 && len(c.args[1]) > 100 {
				c.args[1] = "<big>"
			}
			if code != exitUsage || out != "" {
				t.Fatalf("push %q: exit %d, stdout %q, stderr %q; want exit 64 and no id", c.args, code, out, errs)
			}
			expect(t, code, errs, exitUsage, c.word)
		}
		// Nothing was enqueued, not even the queue's name.
		code, _, errs := run(t, dsn, "queue", "stats", "fresh")
		expect(t, code, errs, exitNoQueue, "no queue fresh")
		out := runOK(t, dsn, "queue", "stats", "--json")
		if strings.TrimSpace(out) != "[]" {
			t.Fatalf("queues after bad pushes: %s", out)
		}
		for _, args := range [][]string{
			{"queue", "stats", "bad queue!"},
			{"queue", "dead", "q", "--limit", "0"},
			{"queue", "dead"},
			{"queue", "bogus"},
		} {
			code, _, errs := run(t, dsn, args...)
			expect(t, code, errs, exitUsage, "")
		}
	})
}

// lines reads the lines of a file, failing the test when it cannot.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestWorkSaysPaused: a worker started on a paused queue says so on
// stderr (it would otherwise wait, or drain nothing, without a word), and
// runs nothing until the queue resumes.
func TestWorkSaysPaused(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		pushID(t, dsn, "", "pz", "m")
		runOK(t, dsn, "queue", "pause", "pz")
		file := filepath.Join(t.TempDir(), "out")
		code, _, errs := run(t, dsn, "work", "pz", "--drain", "--", "sh", "-c", `cat >> "$0"`, file)
		expect(t, code, errs, 0, "")
		if !strings.Contains(errs, "queue is paused") || strings.Count(errs, "paused") != 1 {
			t.Fatalf("a drain of a paused queue said %q, want one line saying it is paused", errs)
		}
		if got, _ := os.ReadFile(file); len(got) != 0 {
			t.Fatalf("ran %q on a paused queue", got)
		}
	})
}

func TestWorkDrain(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		type pushed struct{ payload, key, max string }
		want := map[int64]pushed{}
		for i := range 6 {
			p := pushed{payload: fmt.Sprintf("m%d", i), max: strconv.Itoa(baton.DefaultMaxAttempts)}
			args := []string{"q", p.payload}
			if i%2 == 0 {
				p.key = fmt.Sprintf("k%d", i)
				args = append(args, "--key", p.key)
			}
			if i == 5 {
				p.max = "4"
				args = append(args, "--max-attempts", "4")
			}
			want[pushID(t, dsn, "", args...)] = p
		}
		file := filepath.Join(t.TempDir(), "out")
		code, out, errs := run(t, dsn, "work", "q", "--drain", "--concurrency", "3", "--",
			"sh", "-c", `printf '%s|%s|%s|%s|%s|%s\n' "$BATON_MESSAGE_ID" "$BATON_QUEUE" "$BATON_ATTEMPT" "$BATON_MAX_ATTEMPTS" "$BATON_KEY" "$(cat)" >> "$0"; echo "out $BATON_MESSAGE_ID"`,
			file)
		expect(t, code, errs, 0, "")
		if n := strings.Count(out, "out "); n != len(want) {
			t.Fatalf("CMD's stdout did not pass through once per message: %q", out)
		}
		got := lines(t, file)
		if len(got) != len(want) {
			t.Fatalf("%d runs for %d messages: %q", len(got), len(want), got)
		}
		seen := map[int64]bool{}
		for _, l := range got {
			f := strings.Split(l, "|")
			id, _ := strconv.ParseInt(f[0], 10, 64)
			p, ok := want[id]
			if len(f) != 6 || !ok || seen[id] || f[1] != "q" || f[2] != "1" || f[3] != p.max || f[4] != p.key || f[5] != p.payload {
				t.Fatalf("run %q: want message %d once with %+v (all: %q)", l, id, p, got)
			}
			seen[id] = true
		}
		wantCounts(t, statsOf(t, dsn, "q"), 0, 0, 0, 0)

		// --ordered: one at a time, in order.
		var order []string
		for i := range 4 {
			order = append(order, fmt.Sprintf("o%d", i))
			pushID(t, dsn, "", "ord", order[i])
		}
		file2 := filepath.Join(t.TempDir(), "ordered")
		runOK(t, dsn, "work", "ord", "--ordered", "--drain", "--", "sh", "-c", `printf '%s\n' "$(cat)" >> "$0"`, file2)
		if got := lines(t, file2); !slices.Equal(got, order) {
			t.Fatalf("ordered runs %q, want %q", got, order)
		}
		// --per-key: every message once.
		for i := range 4 {
			pushID(t, dsn, "", "pk", fmt.Sprintf("p%d", i), "--key", fmt.Sprintf("k%d", i%2))
		}
		file3 := filepath.Join(t.TempDir(), "perkey")
		runOK(t, dsn, "work", "pk", "--per-key", "--concurrency", "4", "--drain", "--", "sh", "-c", `printf '%s\n' "$(cat)" >> "$0"`, file3)
		got = lines(t, file3)
		slices.Sort(got)
		if !slices.Equal(got, []string{"p0", "p1", "p2", "p3"}) {
			t.Fatalf("per-key runs %q", got)
		}
		wantCounts(t, statsOf(t, dsn, "pk"), 0, 0, 0, 0)
	})
}

func TestWorkDeadLetter(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		id := pushID(t, dsn, "", "q", "bad", "--max-attempts", "2")
		file := filepath.Join(t.TempDir(), "attempts")
		env := []string{"BATON_RETRY_BASE=20ms"}
		var stderr string
		// --drain leaves a message backing off for later: run it again, as
		// cron would, until the message is dead.
		for i := 0; ; i++ {
			code, _, errs := runWith(t, dsn, "", env, "work", "q", "--drain", "--",
				"sh", "-c", `echo "$BATON_ATTEMPT" >> "$0"; echo "boom $BATON_ATTEMPT" >&2; exit 3`, file)
			expect(t, code, errs, 0, "")
			stderr += errs
			if st := statsOf(t, dsn, "q"); st["dead"] == 1.0 {
				wantCounts(t, st, 0, 0, 0, 1)
				break
			}
			if i == 100 {
				t.Fatalf("not a dead letter after %d drains; stderr %q", i, stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := lines(t, file); !slices.Equal(got, []string{"1", "2"}) {
			t.Fatalf("attempts run %q, want 1 and 2", got)
		}
		if !strings.Contains(stderr, "boom 1") || !strings.Contains(stderr, "status 3") {
			t.Fatalf("CMD's stderr or the failure not shown: %q", stderr)
		}
		out := runOK(t, dsn, "queue", "dead", "q", "--json")
		var dead []map[string]any
		if err := json.Unmarshal([]byte(out), &dead); err != nil || len(dead) != 1 {
			t.Fatalf("dead: %v: %s", err, out)
		}
		d := dead[0]
		if d["id"] != float64(id) || d["attempts"] != 2.0 || d["payload"] != "bad" ||
			!strings.Contains(d["error"].(string), "status 3") || !strings.Contains(d["error"].(string), "boom 2") {
			t.Fatalf("dead letter %v", d)
		}
		code, _, errs := runWith(t, dsn, "", []string{"BATON_RETRY_BASE=fast"}, "work", "q", "--drain", "--", "true")
		expect(t, code, errs, exitUsage, "BATON_RETRY_BASE")
	})
}

func TestWorkBadInput(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		pushID(t, dsn, "", "q", "keep")
		for _, c := range []struct {
			args []string
			code int
			word string
		}{
			{[]string{"work", "q", "--"}, exitUsage, "command"},
			{[]string{"work", "q", "true"}, exitUsage, "--"},
			{[]string{"work", "--", "true"}, exitUsage, "QUEUE"},
			{[]string{"work", "q", "--ordered", "--per-key", "--", "true"}, exitUsage, "--ordered"},
			{[]string{"work", "q", "--concurrency", "0", "--", "true"}, exitUsage, "concurrency"},
			{[]string{"work", "q", "--concurrency", "x", "--", "true"}, exitUsage, "concurrency"},
			{[]string{"work", "q", "--visibility", "10ms", "--", "true"}, exitUsage, "visibility"},
			{[]string{"work", "bad queue!", "--", "true"}, exitUsage, "queue"},
			{[]string{"work", "q", "--drain", "--", "/nonexistent/cmd"}, 127, "not found"},
		} {
			code, _, errs := run(t, dsn, c.args...)
			expect(t, code, errs, c.code, c.word)
		}
		// Nothing was claimed.
		st := statsOf(t, dsn, "q")
		wantCounts(t, st, 1, 0, 0, 0)
		_, s := client(t, dsn)
		ms, err := s.Claim(context.Background(), "q", baton.ClaimOptions{})
		if err != nil || ms[0].Attempt != 1 {
			t.Fatalf("claim after the bad calls: %v, %v (want first attempt)", ms, err)
		}
	})
}

// waitStats polls the stats of a queue until cond holds (at most 20s).
func waitStats(t *testing.T, c *baton.Client, queue string, cond func(baton.QueueStats) bool) baton.QueueStats {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := c.Stats(context.Background(), queue)
		if err == nil && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats of %s: %+v, %v: condition not reached in 20s", queue, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startBaton starts a baton process, killed when the test ends.
func startBaton(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
}

// stopGracefully sends a baton process SIGTERM and expects it to exit 0
// within 15 s.
func stopGracefully(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expect(t, waitExit(t, cmd, 15*time.Second), "", 0, "")
}

// waitExit waits at most d for a started command and returns its status.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(d):
		_ = cmd.Process.Kill()
		t.Fatalf("%s did not exit within %v", cmd.Args, d)
	}
	return 0
}

func TestWorkGracefulStop(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		c, _ := client(t, dsn)
		pushID(t, dsn, "", "q", "slow")
		file := filepath.Join(t.TempDir(), "out")
		// CMD says it started: a message claimed but not yet started when
		// the stop comes goes back to the queue unhandled, by design.
		w := exec.Command(bin, "--dsn", dsn, "work", "q", "--", "sh", "-c", `: > "$0.started"; sleep 1; cat >> "$0"`, file)
		var errb bytes.Buffer
		w.Stderr = &errb
		startBaton(t, w)
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(file + ".started"); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the command never started")
			}
			time.Sleep(5 * time.Millisecond)
		}
		stopGracefully(t, w)
		if b, _ := os.ReadFile(file); string(b) != "slow" {
			t.Fatalf("the message in flight was not finished: %q (stderr %q)", b, errb.String())
		}
		st := waitStats(t, c, "q", func(baton.QueueStats) bool { return true })
		if st.Unfinished()+st.Dead != 0 {
			t.Fatalf("after a graceful stop: %+v", st)
		}

		// Past --grace the command is killed and its message retried.
		pushID(t, dsn, "", "q", "stuck")
		w = exec.Command(bin, "--dsn", dsn, "work", "q", "--grace", "200ms", "--", "sh", "-c", "sleep 30")
		startBaton(t, w)
		waitStats(t, c, "q", func(st baton.QueueStats) bool { return st.Claimed == 1 })
		// With --grace 200ms the 30 s command is killed: baton exits well
		// before it would have ended (a hang guard, not a speed check).
		stopGracefully(t, w)
		st = waitStats(t, c, "q", func(baton.QueueStats) bool { return true })
		if st.Claimed != 0 || st.Ready+st.Scheduled+st.Retrying != 1 {
			ms, _, _ := c.ListMessages(context.Background(), baton.ListOptions{Queue: "q"})
			t.Fatalf("the killed message is not back in the queue: %+v; messages %+v", st, ms)
		}
	})
}

// lineReader delivers the lines of r on a channel.
func lineReader(r io.Reader) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

func TestNotifyListen(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		// Migrate first, so that the listeners do not race each other to it.
		client(t, dsn)
		start := func(args ...string) (*exec.Cmd, <-chan string) {
			cmd := exec.Command(bin, append([]string{"--dsn", dsn, "listen"}, args...)...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			startBaton(t, cmd)
			return cmd, lineReader(out)
		}
		plain, plainLines := start("ch", "other")
		js, jsLines := start("--json", "ch")
		// A listener gets only what is sent once it listens: send until
		// both have seen one.
		gotPlain, gotJSON := false, false
		deadline := time.After(20 * time.Second)
		for !gotPlain || !gotJSON {
			runOK(t, dsn, "notify", "ch", "hello world")
			tick := time.After(300 * time.Millisecond)
		read:
			for {
				select {
				case l := <-plainLines:
					if l != "ch hello world" {
						t.Fatalf("listen printed %q", l)
					}
					gotPlain = true
				case l := <-jsLines:
					var n map[string]string
					if err := json.Unmarshal([]byte(l), &n); err != nil || n["channel"] != "ch" || n["payload"] != "hello world" || len(n) != 2 {
						t.Fatalf("listen --json printed %q", l)
					}
					gotJSON = true
				case <-tick:
					break read
				case <-deadline:
					t.Fatalf("no notification after 20s (plain %v, json %v)", gotPlain, gotJSON)
				}
			}
		}
		runOK(t, dsn, "notify", "other", "")
		timeout := time.After(20 * time.Second)
		for got := false; !got; {
			select {
			case l := <-plainLines:
				got = l == "other "
				if !got && l != "ch hello world" {
					t.Fatalf("listen printed %q", l)
				}
			case <-timeout:
				t.Fatal("the empty notification on the second channel never arrived")
			}
		}
		for _, cmd := range []*exec.Cmd{plain, js} {
			stopGracefully(t, cmd)
		}
		for _, c := range []struct {
			args []string
			word string
		}{
			{[]string{"notify", "bad channel", "x"}, "channel"},
			{[]string{"notify", "", "x"}, "channel"},
			{[]string{"notify", "ch"}, "missing"},
			{[]string{"notify", "ch", strings.Repeat("p", baton.MaxPayload+1)}, "payload"},
			{[]string{"listen"}, "missing"},
			{[]string{"listen", "ok", "bad/channel"}, "channel"},
		} {
			code, _, errs := run(t, dsn, c.args...)
			expect(t, code, errs, exitUsage, c.word)
		}
	})
}

// TestWorkSlowMessagesOnce: messages waiting in a worker's hands while
// earlier ones run slowly are still delivered once each, on their first
// attempt, with --visibility shorter than the whole backlog takes.
func TestWorkSlowMessagesOnce(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		const n = 14
		for i := range n {
			pushID(t, dsn, "", "slow", fmt.Sprintf("s%d", i))
		}
		file := filepath.Join(t.TempDir(), "runs")
		code, _, errs := run(t, dsn, "work", "slow", "--drain", "--visibility", "1s", "--",
			"sh", "-c", `printf '%s %s\n' "$(cat)" "$BATON_ATTEMPT" >> "$0"; sleep 0.5`, file)
		expect(t, code, errs, 0, "")
		got := lines(t, file)
		slices.Sort(got)
		var want []string
		for i := range n {
			want = append(want, fmt.Sprintf("s%d 1", i))
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("runs (payload attempt) %q, want each message once on attempt 1; stderr %q", got, errs)
		}
	})
}

// TestWorkStopReturnsUnstarted: on SIGTERM the worker finishes the command
// that runs and leaves the other messages in the queue, unstarted and with
// no attempt counted.
func TestWorkStopReturnsUnstarted(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		c, _ := client(t, dsn)
		for i := range 4 {
			pushID(t, dsn, "", "q", fmt.Sprintf("m%d", i))
		}
		file := filepath.Join(t.TempDir(), "runs")
		w := exec.Command(bin, "--dsn", dsn, "work", "q", "--", "sh", "-c", `printf '%s\n' "$(cat)" >> "$0"; sleep 1`, file)
		startBaton(t, w)
		deadline := time.Now().Add(20 * time.Second)
		for {
			if b, _ := os.ReadFile(file); len(b) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no message started within 20s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		stopGracefully(t, w)
		if got := lines(t, file); len(got) != 1 {
			t.Fatalf("after SIGTERM during the first message, %d messages were started: %q", len(got), got)
		}
		st := waitStats(t, c, "q", func(baton.QueueStats) bool { return true })
		if st.Ready != 3 || st.Scheduled+st.Retrying+st.Claimed+st.Dead != 0 {
			t.Fatalf("the unstarted messages are not ready in the queue: %+v", st)
		}
		_, s := client(t, dsn)
		ms, err := s.Claim(context.Background(), "q", baton.ClaimOptions{Max: 3})
		if err != nil || len(ms) != 3 {
			t.Fatalf("claim: %d, %v", len(ms), err)
		}
		for _, m := range ms {
			if m.Attempt != 1 {
				t.Fatalf("message %q: attempt %d, want 1 (it never ran)", m.Payload, m.Attempt)
			}
		}
	})
}

// TestDrainRescuesKilledWorker: the cron pattern. A worker is SIGKILLed
// with a message claimed; the very next `baton work --drain` (no other
// baton process runs meanwhile) frees the dead worker's claim and handles
// the message.
func TestDrainRescuesKilledWorker(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		pushID(t, dsn, "", "rq", "job")
		w := exec.Command(bin, "--dsn", dsn, "work", "rq", "--", "sh", "-c", "sleep 60")
		w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL) })
		deadline := time.Now().Add(20 * time.Second)
		for statsOf(t, dsn, "rq")["claimed"] != float64(1) {
			if time.Now().After(deadline) {
				t.Fatal("the worker never claimed the message")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := syscall.Kill(-w.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = w.Wait()
		file := filepath.Join(t.TempDir(), "out")
		code, _, errs := runWith(t, dsn, "", nil, "work", "rq", "--drain", "--", "sh", "-c", `cat >> "$0"`, file)
		expect(t, code, errs, 0, "")
		if got, _ := os.ReadFile(file); string(got) != "job" {
			t.Fatalf("the drain did not handle the killed worker's message: %q", got)
		}
	})
}

// TestMessageFieldsOrder: baton queue get shows a message's times in the
// order of its life, the same on every run.
func TestMessageFieldsOrder(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	m := baton.MessageInfo{ID: 7, Queue: "q", RunAt: at, ClaimedUntil: at.Add(time.Minute), FinishedAt: at.Add(time.Hour)}
	for range 20 {
		var names []string
		for _, f := range messageFields(m) {
			if strings.Contains(f[0], " ") || f[0] == "finished" {
				names = append(names, f[0])
			}
		}
		if want := []string{"run at", "claimed until", "finished"}; !slices.Equal(names, want) {
			t.Fatalf("times shown as %v, want %v", names, want)
		}
	}
}

// TestUnknownQueueExits: every command on a QUEUE says "no queue X" and
// exits 66 for a queue baton has never seen, and 64 for a malformed name;
// the same commands on a known queue succeed. queue list --limit takes 1
// to 1000, as its help says.
func TestUnknownQueueExits(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		pushID(t, dsn, "", "known", "x")
		var cases []exitCase
		for _, c := range [][]string{{"stats"}, {"list"}, {"list", "--state", "dead"}, {"dead"}, {"redrive"}, {"purge"}, {"pause"}, {"resume"}} {
			args := func(q string) []string { return append([]string{"--dsn", dsn, "queue", c[0], q}, c[1:]...) }
			cases = append(cases, exitCase{args("nope"), exitNoQueue, "no queue nope"},
				exitCase{args("bad name"), exitUsage, "bad name"}, exitCase{args("known"), 0, ""})
		}
		for _, limit := range []string{"0", "-1", "1001"} {
			cases = append(cases, exitCase{[]string{"--dsn", dsn, "queue", "list", "--limit", limit}, exitUsage, "--limit " + limit + ": give 1 to 1000"})
		}
		checkExits(t, cases)
	})
}
