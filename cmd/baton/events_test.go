package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/batontest"
)

// TestEventsCommands: subscribe, list, work and unsubscribe from the shell,
// with the changes made by a plain SQL client; the command gets each event
// in canonical form, the same bytes on every backend but for the table's
// name, and its primary key in BATON_KEY.
func TestEventsCommands(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		db := batontest.SQLDB(t, dsn)
		if _, err := db.Exec(`CREATE TABLE langs (id INT NOT NULL PRIMARY KEY, name VARCHAR(20))`); err != nil {
			t.Fatal(err)
		}
		runOK(t, dsn, "events", "subscribe", "langs", "--on", "insert,delete", "--name", "bell")
		out := runOK(t, dsn, "events", "list", "--json")
		var subs []map[string]any
		if err := json.Unmarshal([]byte(out), &subs); err != nil || len(subs) != 1 || subs[0]["name"] != "bell" {
			t.Fatalf("list: %s %v", out, err)
		}
		ph := "?"
		if b.Name == "postgres" {
			ph = "$1"
		}
		for _, id := range []int{1, 2, 3} {
			if _, err := db.Exec(`INSERT INTO langs (id, name) VALUES (`+ph+`, 'x')`, id); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(`DELETE FROM langs WHERE id = `+ph, 2); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "events")
		code, _, errs := run(t, dsn, "events", "work", "bell", "--ordered", "--drain", "--",
			"sh", "-c", `printf '%s ' "$BATON_KEY" >> "$0"; cat >> "$0"; echo >> "$0"`, file)
		expect(t, code, errs, 0, "")
		table, _ := json.Marshal(subs[0]["table"]) // "langs", or "schema.langs" on PostgreSQL
		var want []string
		for _, e := range []struct{ action, id, row string }{
			{"insert", "1", "new"}, {"insert", "2", "new"}, {"insert", "3", "new"}, {"delete", "2", "old"},
		} {
			row := `{"id":` + e.id + `,"name":"x"}`
			newRow, oldRow := row, "null"
			if e.row == "old" {
				newRow, oldRow = oldRow, newRow
			}
			want = append(want, `{"id":`+e.id+`} {"subscription":"bell","table":`+string(table)+`,"action":"`+e.action+
				`","pk":{"id":`+e.id+`},"new":`+newRow+`,"old":`+oldRow+`}`)
		}
		if got := lines(t, file); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		code, _, errs = run(t, dsn, "events", "subscribe", "nosuch", "--name", "x")
		expect(t, code, errs, exitUsage, "does not exist")
		code, _, errs = run(t, dsn, "events", "subscribe", "langs", "--on", "truncate", "--name", "x")
		expect(t, code, errs, exitUsage, "action")
		code, _, errs = run(t, dsn, "events", "work", "nosub", "--", "true")
		expect(t, code, errs, exitUsage, "unknown subscription")
		code, out, errs = run(t, dsn, "events", "refresh", "langs")
		if code != 0 || !strings.Contains(out, "refreshed the triggers on langs") {
			t.Fatalf("events refresh: %d %q %q", code, out, errs)
		}
		code, _, errs = run(t, dsn, "events", "refresh", "nosuch")
		expect(t, code, errs, exitUsage, "does not exist")
		runOK(t, dsn, "events", "unsubscribe", "bell")
		code, _, errs = run(t, dsn, "events", "refresh", "langs")
		expect(t, code, errs, exitUsage, "no subscription")
	})
}
