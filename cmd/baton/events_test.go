package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/batontest"
)

// TestEventsCommands: subscribe, list, work and unsubscribe from the shell,
// with the changes made by a plain SQL client.
func TestEventsCommands(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := b.NewDSN(t)
		db := batontest.SQLDB(t, dsn)
		if _, err := db.Exec(`CREATE TABLE langs (id INT NOT NULL PRIMARY KEY, name VARCHAR(20))`); err != nil {
			t.Fatal(err)
		}
		code, _, errs := run(t, dsn, "events", "subscribe", "langs", "--on", "insert,delete", "--name", "bell")
		expect(t, code, errs, 0, "")
		code, out, errs := run(t, dsn, "events", "list", "--json")
		expect(t, code, errs, 0, "")
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
		code, _, errs = run(t, dsn, "events", "work", "bell", "--ordered", "--drain", "--",
			"sh", "-c", `cat >> "$0"; echo >> "$0"`, file)
		expect(t, code, errs, 0, "")
		got := lines(t, file)
		var actions []string
		for _, l := range got {
			var e struct {
				Action string `json:"action"`
				PK     struct {
					ID int `json:"id"`
				} `json:"pk"`
			}
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("event line %q: %v", l, err)
			}
			actions = append(actions, e.Action+":"+string(rune('0'+e.PK.ID)))
		}
		if strings.Join(actions, " ") != "insert:1 insert:2 insert:3 delete:2" {
			t.Fatalf("events %v", actions)
		}
		code, _, errs = run(t, dsn, "events", "subscribe", "nosuch", "--name", "x")
		expect(t, code, errs, exitUsage, "does not exist")
		code, _, errs = run(t, dsn, "events", "subscribe", "langs", "--on", "truncate", "--name", "x")
		expect(t, code, errs, exitUsage, "action")
		code, _, errs = run(t, dsn, "events", "work", "nosub", "--", "true")
		expect(t, code, errs, exitUsage, "unknown subscription")
		code, _, errs = run(t, dsn, "events", "unsubscribe", "bell")
		expect(t, code, errs, 0, "")
	})
}
