package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// getJSON runs `baton queue get ID --json`.
func getJSON(t *testing.T, dsn string, id int64) map[string]any {
	t.Helper()
	var m map[string]any
	out := runOK(t, dsn, "queue", "get", strconv.FormatInt(id, 10), "--json")
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("queue get --json: %v: %q", err, out)
	}
	return m
}

// TestQueueData: push --meta and --tag, list --tag and --meta, get shows
// metadata, tags and output, update merges metadata, and work --output
// records CMD's standard output (JSON as it is, text as a string); bad
// input exits 64.
func TestQueueData(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		tagged := pushID(t, dsn, "", "jd", `{"n":1}`, "--meta", `{"customer":"acme"}`, "--tag", "vip", "--tag", "eu")
		plain := pushID(t, dsn, "", "jd", "text")
		out := runOK(t, dsn, "queue", "list", "jd", "--tag", "vip", "--json")
		var listed []map[string]any
		if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 1 || listed[0]["id"] != float64(tagged) {
			t.Fatalf("list --tag vip: %v %s", err, out)
		}
		if out := runOK(t, dsn, "queue", "list", "jd", "--meta", "customer=acme"); !strings.Contains(out, strconv.FormatInt(tagged, 10)) || strings.Contains(out, "\n"+strconv.FormatInt(plain, 10)) {
			t.Fatalf("list --meta customer=acme: %q", out)
		}
		if out := runOK(t, dsn, "queue", "list", "jd", "--tag", "none"); strings.Contains(out, strconv.FormatInt(tagged, 10)) {
			t.Fatalf("list --tag none: %q", out)
		}
		runOK(t, dsn, "queue", "update", strconv.FormatInt(tagged, 10), "--meta", `{"reviewed":"ann"}`)
		m := getJSON(t, dsn, tagged)
		if fmt.Sprint(m["metadata"]) != "map[customer:acme reviewed:ann]" || fmt.Sprint(m["tags"]) != "[eu vip]" {
			t.Fatalf("queue get --json after update: %v", m)
		}
		code, _, errs := run(t, dsn, "work", "jd", "--drain", "--output", "--", "sh", "-c", `if [ "$(cat)" = text ]; then echo plain words; else echo '{"sum": 3}'; fi`)
		expect(t, code, errs, 0, "")
		if m := getJSON(t, dsn, tagged); m["state"] != "completed" || fmt.Sprint(m["output"]) != "map[sum:3]" {
			t.Fatalf("work --output, JSON: %v", m)
		}
		if m := getJSON(t, dsn, plain); m["output"] != "plain words\n" {
			t.Fatalf("work --output, text: %v", m)
		}
		text := runOK(t, dsn, "queue", "get", strconv.FormatInt(tagged, 10))
		for _, want := range []string{"tags", "eu, vip", `{"customer":"acme","reviewed":"ann"}`, `{"sum":3}`} {
			if !strings.Contains(text, want) {
				t.Fatalf("queue get does not show %q: %s", want, text)
			}
		}
		// A long output is cut to fit, as text.
		long := pushID(t, dsn, "", "jl", "x")
		code, _, errs = run(t, dsn, "work", "jl", "--drain", "--output", "--", "sh", "-c", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a", baton.MaxOutput+100))
		expect(t, code, errs, 0, "")
		if s, _ := getJSON(t, dsn, long)["output"].(string); len(s) != baton.MaxOutput-2 || strings.Trim(s, "a") != "" {
			t.Fatalf("a long output: %d bytes recorded", len(s))
		}
		// Without --output nothing is recorded.
		none := pushID(t, dsn, "", "jn", "x")
		code, _, errs = run(t, dsn, "work", "jn", "--drain", "--", "echo", "hi")
		expect(t, code, errs, 0, "")
		if m := getJSON(t, dsn, none); m["output"] != nil {
			t.Fatalf("without --output: %v", m)
		}
		checkExits(t, []exitCase{
			{[]string{"--dsn", dsn, "queue", "push", "jd", "x", "--meta", "[1]"}, 64, "JSON object"},
			{[]string{"--dsn", dsn, "queue", "push", "jd", "x", "--tag", "has space"}, 64, "tag"},
			{[]string{"--dsn", dsn, "queue", "list", "--tag", "bad tag"}, 64, "tag"},
			{[]string{"--dsn", dsn, "queue", "list", "--meta", "novalue"}, 64, "KEY=VALUE"},
			{[]string{"--dsn", dsn, "queue", "update", strconv.FormatInt(plain, 10), "--meta", "1"}, 64, "JSON object"},
			{[]string{"--dsn", dsn, "queue", "update", strconv.FormatInt(plain, 10)}, 64, "--meta"},
			{[]string{"--dsn", dsn, "queue", "update", "999999", "--meta", "{}"}, 66, "no message"},
		})
	})
}

// TestQueuePushUniqueArgs: push --unique-args collides on an equal
// payload of the same kind, whatever the order of its JSON keys.
func TestQueuePushUniqueArgs(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		first := pushID(t, dsn, "", "ju", `{"a":1,"b":2}`, "--unique-args", "--kind", "k")
		out := runOK(t, dsn, "queue", "push", "ju", `{"b":2,"a":1}`, "--unique-args", "--kind", "k")
		if out != fmt.Sprintf("%d duplicate\n", first) {
			t.Fatalf("an equal payload: %q, want the first id and duplicate", out)
		}
		if out := runOK(t, dsn, "queue", "push", "ju", `{"a":1,"b":3}`, "--unique-args", "--kind", "k"); strings.Contains(out, "duplicate") {
			t.Fatalf("another payload: %q", out)
		}
	})
}
