package main

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/batontest"
)

// TestQueueEvents: baton queue events, in a process of its own, prints
// the completed, failed, dead and snoozed events of jobs that baton work
// processes run, and the cancellation of a waiting one by baton queue
// cancel, one JSON line each; --kind and --state keep theirs; a
// bad state is a usage error.
func TestQueueEvents(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		client(t, dsn) // migrate first
		start := func(args ...string) (*exec.Cmd, <-chan string) {
			cmd := exec.Command(bin, append([]string{"--dsn", dsn, "queue", "events"}, args...)...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			startBaton(t, cmd)
			return cmd, lineReader(out)
		}
		all, allLines := start("--queue", "q")
		kept, keptLines := start("--kind", "a", "--state", "completed")
		type event struct {
			ID      int64  `json:"id"`
			Queue   string `json:"queue"`
			Kind    string `json:"kind"`
			State   string `json:"state"`
			Attempt int    `json:"attempt"`
			At      string `json:"at"`
			Error   string `json:"error"`
		}
		parse := func(l string) event {
			t.Helper()
			var ev event
			if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.At == "" {
				t.Fatalf("queue events printed %q", l)
			}
			return ev
		}
		script := `read p; case "$p" in snooze) exit 75;; fail) echo "it failed" >&2; exit 3;; esac`
		drain := func() {
			runOK(t, dsn, "work", "q", "--drain", "--snooze", "1h", "--", "sh", "-c", script)
		}
		// The subscribers get only what happens once they subscribed:
		// run jobs until both have printed one.
		gotAll, gotKept := false, false
		deadline := time.After(30 * time.Second)
		for !gotAll || !gotKept {
			pushID(t, dsn, "", "q", "ok", "--kind", "a")
			drain()
			tick := time.After(300 * time.Millisecond)
		read:
			for {
				select {
				case l := <-allLines:
					gotAll = parse(l).State == "completed"
				case l := <-keptLines:
					gotKept = parse(l).State == "completed"
				case <-tick:
					break read
				case <-deadline:
					t.Fatalf("no event after 30s (all %v, kept %v)", gotAll, gotKept)
				}
			}
		}
		want := map[int64]string{
			pushID(t, dsn, "", "q", "ok", "--kind", "a"):           "completed",
			pushID(t, dsn, "", "q", "ok", "--kind", "b"):           "completed",
			pushID(t, dsn, "", "q", "snooze"):                      "snoozed",
			pushID(t, dsn, "", "q", "fail", "--max-attempts", "3"): "failed",
			pushID(t, dsn, "", "q", "fail", "--max-attempts", "1"): "dead",
		}
		later := pushID(t, dsn, "", "q", "ok", "--delay", "1h")
		want[later] = "cancelled"
		runOK(t, dsn, "queue", "cancel", strconv.FormatInt(later, 10))
		drain()
		got := map[int64]event{}
		timeout := time.After(30 * time.Second)
		for len(got) < len(want) {
			select {
			case l := <-allLines:
				if ev := parse(l); want[ev.ID] != "" {
					got[ev.ID] = ev
				}
			case <-timeout:
				t.Fatalf("events after 30s: %v, want %v", got, want)
			}
		}
		for id, state := range want {
			ev := got[id]
			if ev.State != state || ev.Queue != "q" || ev.Attempt != 1 && state != "cancelled" {
				t.Errorf("job %d: event %+v, want %s", id, ev, state)
			}
			if (state == "failed" || state == "dead") && ev.Error == "" {
				t.Errorf("job %d: event %+v has no error", id, ev)
			}
		}
		// The filtered subscriber printed the completion of kind a only.
		for l := range keptLines {
			ev := parse(l)
			if ev.Kind != "a" || ev.State != "completed" {
				t.Fatalf("--kind a --state completed printed %q", l)
			}
			if want[ev.ID] == "completed" {
				break
			}
		}
		select {
		case l := <-keptLines:
			t.Fatalf("--kind a --state completed printed %q too", l)
		case <-time.After(200 * time.Millisecond):
		}
		stopGracefully(t, all)
		stopGracefully(t, kept)
		code, _, errs := run(t, dsn, "queue", "events", "--state", "finished")
		expect(t, code, errs, exitUsage, "finished")
	})
}
