package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/batontest"
)

// TestQueueHistory: baton work's runs show in baton queue history (its
// process flushes the roll-up when it stops): completed and timed runs,
// as JSON and as a table; bad spans and unknown queues are refused.
func TestQueueHistoryCommand(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		pushID(t, dsn, "", "q", "one")
		pushID(t, dsn, "", "q", "two")
		code, _, errs := run(t, dsn, "work", "q", "--drain", "--", "true")
		expect(t, code, errs, 0, "")
		out := runOK(t, dsn, "queue", "history", "q", "--span", "10m", "--json")
		var pts []map[string]any
		if err := json.Unmarshal([]byte(out), &pts); err != nil || len(pts) != 10 {
			t.Fatalf("history --json: %v: %s", err, out)
		}
		var completed, handled float64
		for _, p := range pts {
			completed += p["completed"].(float64)
			handled += p["handled"].(float64)
		}
		if completed != 2 || handled != 2 {
			t.Fatalf("history: %v completed, %v runs timed; want 2, 2: %s", completed, handled, out)
		}
		out = runOK(t, dsn, "queue", "history", "q", "--span", "1h", "--step", "15m")
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 5 || !strings.Contains(lines[0], "COMPLETED") || !strings.Contains(lines[0], "P99") {
			t.Fatalf("history table:\n%s", out)
		}
		code, _, errs = run(t, dsn, "queue", "history", "q", "--step", "7m")
		expect(t, code, errs, exitUsage, "step")
		code, _, errs = run(t, dsn, "queue", "history", "nope")
		expect(t, code, errs, exitNoQueue, "no queue nope")
	})
}
