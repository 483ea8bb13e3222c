package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestWorkQueueLimit: three `baton work` processes of 4 handlers each on a
// queue limited to 2 (baton queue limit --concurrency 2) never run more
// than 2 commands at once, and do run 2. Each command counts itself in a
// file under flock while it runs; the count it sees is at most the
// handlers running then.
func TestWorkQueueLimit(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		c, _ := client(t, dsn)
		const n = 12
		for i := range n {
			if _, err := c.Enqueue(context.Background(), "limq", fmt.Appendf(nil, "m%d\n", i)); err != nil {
				t.Fatal(err)
			}
		}
		if out := runOK(t, dsn, "queue", "limit", "limq", "--concurrency", "2"); !strings.Contains(out, "concurrency 2") {
			t.Fatalf("baton queue limit printed %q", out)
		}
		dir := t.TempDir()
		count, seen, lock := filepath.Join(dir, "count"), filepath.Join(dir, "seen"), filepath.Join(dir, "lock")
		if err := os.WriteFile(count, []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Under the lock: count one more, write the count seen; run; count
		// one less.
		script := `exec 9>"$2"; flock 9; k=$(( $(cat "$0") + 1 )); echo $k > "$0"; echo $k >> "$1"; flock -u 9
sleep 0.3
flock 9; echo $(( $(cat "$0") - 1 )) > "$0"; flock -u 9`
		var workers []*exec.Cmd
		for range 3 {
			w := exec.Command(bin, "--dsn", dsn, "work", "limq", "--concurrency", "4", "--", "bash", "-c", script, count, seen, lock)
			w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			workers = append(workers, w)
		}
		defer func() {
			for _, w := range workers {
				_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL)
				_ = w.Wait()
			}
		}()
		deadline := time.Now().Add(60 * time.Second)
		for {
			st := statsOf(t, dsn, "limq")
			if st["completed"].(float64) == n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the workers did not finish the queue: %v", st)
			}
			time.Sleep(100 * time.Millisecond)
		}
		data, err := os.ReadFile(seen)
		if err != nil {
			t.Fatal(err)
		}
		peak := 0
		lines := strings.Fields(string(data))
		for _, f := range lines {
			k, _ := strconv.Atoi(f)
			peak = max(peak, k)
		}
		if len(lines) != n || peak != 2 {
			t.Fatalf("%d runs, at most %d at once; want %d runs, 2 at once (the limit, used): %q", len(lines), peak, n, lines)
		}
	})
}

// TestQueueLimitCommand: baton queue limit shows, sets, changes and
// clears a queue's limits; baton queue stats shows them (text and JSON);
// bad limits exit 64, an unknown queue 66.
func TestQueueLimitCommand(t *testing.T) {
	dsn := batontest.SQLiteDSN(t)
	c, _ := client(t, dsn)
	if _, err := c.Enqueue(context.Background(), "mail", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "mail: none"},
		{[]string{"--concurrency", "3"}, "mail: concurrency 3"},
		{[]string{"--partition-by", "key", "--partition-concurrency", "1", "--rate", "10/s"}, "mail: concurrency 3, rate 10/1s, concurrency 1 per key"},
		{[]string{"--rate", "0", "--partition-concurrency", "0"}, "mail: concurrency 3"},
		{[]string{"--none", "--partition-by", "arg:tenant", "--partition-rate", "5/1m"}, "mail: rate 5/1m0s per arg:tenant"},
	} {
		out := runOK(t, dsn, append([]string{"queue", "limit", "mail"}, tc.args...)...)
		if strings.TrimSpace(out) != tc.want {
			t.Fatalf("baton queue limit mail %v: %q, want %q", tc.args, out, tc.want)
		}
	}
	want := baton.QueueLimits{PartitionBy: "arg:tenant", PartitionRate: 5, Per: time.Minute}
	if l, err := c.QueueLimits(context.Background(), "mail"); err != nil || l != want {
		t.Fatalf("limits stored: %+v, %v", l, err)
	}
	if out := runOK(t, dsn, "queue", "stats"); !strings.Contains(out, "mail (limits: rate 5/1m0s per arg:tenant)") {
		t.Fatalf("baton queue stats: %q", out)
	}
	var st struct {
		Queue  string            `json:"queue"`
		Limits baton.QueueLimits `json:"limits"`
	}
	if err := json.Unmarshal([]byte(runOK(t, dsn, "queue", "stats", "mail", "--json")), &st); err != nil || st.Limits != want {
		t.Fatalf("baton queue stats --json: %+v, %v", st, err)
	}
	checkExits(t, []exitCase{
		{[]string{"--dsn", dsn, "queue", "limit", "mail", "--partition-by", "color", "--partition-concurrency", "1"}, exitUsage, "partition by"},
		{[]string{"--dsn", dsn, "queue", "limit", "mail", "--rate", "5"}, exitUsage, "N/PERIOD"},
		{[]string{"--dsn", dsn, "queue", "limit", "mail", "--concurrency", "-1"}, exitUsage, "concurrency"},
		{[]string{"--dsn", dsn, "queue", "limit", "nope"}, exitNoQueue, "no queue nope"},
	})
	if out := runOK(t, dsn, "queue", "limit", "mail", "--none"); strings.TrimSpace(out) != "mail: none" {
		t.Fatalf("--none: %q", out)
	}
}
