package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// bulkOK runs a bulk command and checks the count it prints.
func bulkOK(t *testing.T, dsn string, want int, args ...string) {
	t.Helper()
	if out := strings.TrimSpace(runOK(t, dsn, append([]string{"queue"}, args...)...)); out != fmt.Sprint(want) {
		t.Fatalf("baton queue %v printed %q, want %d", args, out, want)
	}
}

// stateOf is the state baton queue get reports for message id.
func stateOf(t *testing.T, dsn string, id int64) baton.MessageState {
	t.Helper()
	var m baton.MessageInfo
	out := runOK(t, dsn, "queue", "get", fmt.Sprint(id), "--json")
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("get --json: %v: %s", err, out)
	}
	return m.State
}

// TestQueueBulkCommands: cancel, retry and delete by filter print how
// many messages they acted on, refuse a missing or bad filter; delete
// takes a finished message by id; push --at schedules a message.
func TestQueueBulkCommands(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		var a []int64
		for i := range 3 {
			a = append(a, pushID(t, dsn, "", "bq", fmt.Sprint(i), "--kind", "a"))
		}
		other := pushID(t, dsn, "", "bq", "b", "--kind", "b")
		at := pushID(t, dsn, "", "bq", "at", "--at", time.Now().Add(time.Hour).Format(time.RFC3339))
		past := pushID(t, dsn, "", "bq", "past", "--at", "2001-01-01T00:00:00Z")
		for id, want := range map[int64]baton.MessageState{at: baton.StateScheduled, past: baton.StateReady} {
			if st := stateOf(t, dsn, id); st != want {
				t.Fatalf("pushed --at: message %d is %s, want %s", id, st, want)
			}
		}
		bulkOK(t, dsn, 3, "cancel", "--queue", "bq", "--kind", "a")
		bulkOK(t, dsn, 2, "retry", "--queue", "bq", "--state", "cancelled", "--limit", "2")
		bulkOK(t, dsn, 1, "retry", "--state", "cancelled,dead")
		for _, id := range a {
			if st := stateOf(t, dsn, id); st != baton.StateReady {
				t.Fatalf("message %d retried by filter is %s, want ready", id, st)
			}
		}
		bulkOK(t, dsn, 1, "delete", "--queue", "bq", "--state", "scheduled")
		bulkOK(t, dsn, 0, "delete", "--queue", "bq", "--older-than", "1h")
		// A finished message is deleted by id.
		runOK(t, dsn, "queue", "cancel", fmt.Sprint(other))
		runOK(t, dsn, "queue", "delete", fmt.Sprint(other))
		code, _, errs := run(t, dsn, "queue", "get", fmt.Sprint(other))
		expect(t, code, errs, 66, "no message")
		for _, c := range []struct {
			args []string
			code int
			word string
		}{
			{[]string{"delete"}, 64, "filter flags"},
			{[]string{"delete", "--limit", "3"}, 64, "no filter"},
			{[]string{"delete", fmt.Sprint(past), "--queue", "bq"}, 64, "not both"},
			{[]string{"retry", "--queue", "bq", "--state", "ready"}, 64, "retry applies to"},
			{[]string{"cancel", "--queue", "bq", "--state", "finished"}, 64, "message state"},
			{[]string{"delete", "--queue", "bq", "--older-than", "-1h"}, 64, "negative"},
			{[]string{"delete", "--queue", "nope"}, 66, "no queue nope"},
			{[]string{"push", "bq", "x", "--at", "tomorrow"}, 64, "RFC 3339"},
			{[]string{"push", "bq", "x", "--at", "2030-01-01T00:00:00Z", "--delay", "1m"}, 64, "--at and --delay"},
		} {
			code, _, errs := run(t, dsn, append([]string{"queue"}, c.args...)...)
			expect(t, code, errs, c.code, c.word)
		}
		bulkOK(t, dsn, 4, "delete", "--all")
		if st := statsOf(t, dsn, "bq"); st["ready"] != float64(0) || st["cancelled"] != float64(0) {
			t.Fatalf("after delete --all: %v", st)
		}
	})
}
