package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/batontest"
)

// TestWorkSnooze: a command that exits 75 (EX_TEMPFAIL) snoozes its
// message for --snooze without using an attempt: the message is scheduled,
// its attempt taken back and the snooze shown by queue get; a message
// snoozed three times with --max-attempts 2 completes, every run seeing
// attempt 1.
func TestWorkSnooze(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		later := pushID(t, dsn, "", "later", "x", "--max-attempts", "1")
		code, _, errs := run(t, dsn, "work", "later", "--drain", "--snooze", "1h", "--", "sh", "-c", "exit 75")
		expect(t, code, errs, 0, "")
		if !strings.Contains(errs, "snoozed for 1h0m0s") {
			t.Fatalf("the snooze not said: %q", errs)
		}
		get := func(id int64) map[string]any {
			t.Helper()
			var m map[string]any
			out := runOK(t, dsn, "queue", "get", strconv.FormatInt(id, 10), "--json")
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("queue get --json: %v: %q", err, out)
			}
			return m
		}
		m := get(later)
		es, _ := m["errors"].([]any)
		if m["state"] != "scheduled" || m["attempt"] != 0.0 || len(es) != 1 || es[0].(map[string]any)["snoozed"] != true {
			t.Fatalf("a message snoozed for an hour: %v", m)
		}
		if out := runOK(t, dsn, "queue", "get", strconv.FormatInt(later, 10)); !strings.Contains(out, "attempt 1 snoozed for 1h0m0s") {
			t.Fatalf("queue get does not show the snooze: %q", out)
		}

		id := pushID(t, dsn, "", "q", "x", "--max-attempts", "2")
		file := filepath.Join(t.TempDir(), "attempts")
		// The first three runs exit 75. --drain leaves a snoozed message for
		// later: run again, as cron would, until it completes.
		script := `echo "$BATON_ATTEMPT" >> "$0"; [ "$(wc -l < "$0")" -gt 3 ] || exit 75`
		for i := 0; ; i++ {
			code, _, errs := run(t, dsn, "work", "q", "--drain", "--snooze", "100ms", "--", "sh", "-c", script, file)
			expect(t, code, errs, 0, "")
			if get(id)["state"] == "completed" {
				break
			}
			if i == 100 {
				t.Fatalf("not completed after %d drains: %v", i, get(id))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := lines(t, file); !slices.Equal(got, []string{"1", "1", "1", "1"}) {
			t.Fatalf("runs saw attempts %q, want 1 four times", got)
		}
		m = get(id)
		if es, _ := m["errors"].([]any); m["attempt"] != 1.0 || len(es) != 3 {
			t.Fatalf("completed after three snoozes: %v", m)
		}
		code, _, errs = run(t, dsn, "work", "q", "--drain", "--snooze", "-1s", "--", "true")
		expect(t, code, errs, exitUsage, "--snooze")
	})
}
