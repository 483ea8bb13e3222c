package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/batontest"
)

// TestPushAfter: push --after orders a delayed parent before its child:
// the child, pushed without delay, is pending (queue get shows it and its
// parent, queue list --state pending lists it) and runs only after the
// parent completed. An unknown parent is bad input.
func TestPushAfter(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		parent := pushID(t, dsn, "", "dq", "parent", "--delay", "2s")
		child := pushID(t, dsn, "", "dq", "child", "--after", strconv.FormatInt(parent, 10))
		out := runOK(t, dsn, "queue", "get", strconv.FormatInt(child, 10))
		if !strings.Contains(out, "pending") || !strings.Contains(out, strconv.FormatInt(parent, 10)+" (scheduled)") {
			t.Fatalf("queue get of the child:\n%s", out)
		}
		if out := runOK(t, dsn, "queue", "list", "dq", "--state", "pending"); !strings.Contains(out, strconv.FormatInt(child, 10)) {
			t.Fatalf("queue list --state pending:\n%s", out)
		}
		// The stats table: PENDING 1, then READY 0, SCHEDULED 1.
		if out := runOK(t, dsn, "queue", "stats", "dq"); !strings.Contains(out, "PENDING") || !regexp.MustCompile(`\ndq\s+1\s+0\s+1\s`).MatchString(out) {
			t.Fatalf("queue stats:\n%s", out)
		}
		state := func(id int64) string {
			t.Helper()
			var m map[string]any
			out := runOK(t, dsn, "queue", "get", strconv.FormatInt(id, 10), "--json")
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("queue get --json: %v: %q", err, out)
			}
			return m["state"].(string)
		}
		file := filepath.Join(t.TempDir(), "ran")
		// Drains, as cron would run them, until the child completed.
		for i := 0; state(child) != "completed"; i++ {
			if i == 200 {
				t.Fatalf("child %s after %d drains", state(child), i)
			}
			code, _, errs := run(t, dsn, "work", "dq", "--drain", "--", "sh", "-c", `cat >> "$0"; echo >> "$0"`, file)
			expect(t, code, errs, 0, "")
			time.Sleep(20 * time.Millisecond)
		}
		if got := lines(t, file); !slices.Equal(got, []string{"parent", "child"}) {
			t.Fatalf("ran %q, want the parent, then the child", got)
		}
		code, _, errs := run(t, dsn, "queue", "push", "dq", "x", "--after", "999999999")
		expect(t, code, errs, exitUsage, "no such message")
	})
}

// TestDrainRunsDependants: one work --drain runs a chain to its end: the
// dependants of what it completed are made ready before it returns.
func TestDrainRunsDependants(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		first := pushID(t, dsn, "", "chain", "1")
		second := pushID(t, dsn, "", "chain", "2", "--after", strconv.FormatInt(first, 10))
		pushID(t, dsn, "", "chain", "3", "--after", strconv.FormatInt(second, 10))
		file := filepath.Join(t.TempDir(), "ran")
		code, _, errs := run(t, dsn, "work", "chain", "--drain", "--", "sh", "-c", `cat >> "$0"; echo >> "$0"`, file)
		expect(t, code, errs, 0, "")
		if got := lines(t, file); !slices.Equal(got, []string{"1", "2", "3"}) {
			t.Fatalf("one drain ran %q, want the chain 1, 2, 3", got)
		}
	})
}
