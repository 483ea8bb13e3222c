package main

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// uninstallJSON runs `baton uninstall --json` with extra flags and
// returns its exit status, report and stderr.
func uninstallJSON(t *testing.T, dsn string, flags ...string) (int, baton.UninstallReport, string) {
	t.Helper()
	code, out, errs := run(t, dsn, append([]string{"uninstall", "--json"}, flags...)...)
	var r baton.UninstallReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("uninstall --json printed %q (stderr %q): %v", out, errs, err)
	}
	return code, r, errs
}

// TestUninstallCommand: `baton uninstall` lists baton's objects (the
// capture triggers on a program's table included) and removes nothing;
// --yes beside a live session exits 1 naming it and removes nothing;
// --yes removes everything, the program's table and rows stay; bad usage
// exits 64; migrate installs afresh after.
func TestUninstallCommand(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		db := batontest.SQLDB(t, dsn)
		if _, err := db.Exec(`CREATE TABLE langs (id INT NOT NULL PRIMARY KEY, name VARCHAR(20))`); err != nil {
			t.Fatal(err)
		}
		runOK(t, dsn, "events", "subscribe", "langs", "--name", "bell")
		if _, err := db.Exec(`INSERT INTO langs (id, name) VALUES (1, 'x')`); err != nil {
			t.Fatal(err)
		}
		out := runOK(t, dsn, "uninstall")
		for _, want := range []string{"baton_migrations", "baton_sessions", "trigger", "langs", "baton uninstall --yes"} {
			if !strings.Contains(out, want) {
				t.Fatalf("dry run does not name %q:\n%s", want, out)
			}
		}
		code, listed, errs := uninstallJSON(t, dsn)
		expect(t, code, errs, 0, "")
		if listed.Removed || len(listed.Objects) == 0 {
			t.Fatalf("dry run: %+v", listed)
		}

		// A live session: exit 1, naming it and --force; nothing removed.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := baton.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		code, _, errs = run(t, dsn, "uninstall", "--yes")
		expect(t, code, errs, exitError, s.ID())
		if !strings.Contains(errs, "--force") {
			t.Fatalf("stderr %q does not name --force", errs)
		}
		if code, r, errs := uninstallJSON(t, dsn); code != 0 || len(r.Objects) != len(listed.Objects) {
			t.Fatalf("after a refused removal: exit %d, %d objects, want %d (stderr %q)", code, len(r.Objects), len(listed.Objects), errs)
		}
		c.Close()

		for _, args := range [][]string{{"uninstall", "--force"}, {"uninstall", "extra"}, {"uninstall", "--nope"}} {
			code, _, errs = run(t, dsn, args...)
			expect(t, code, errs, exitUsage, "")
		}

		out = runOK(t, dsn, "uninstall", "--yes")
		if !strings.Contains(out, "Removed") {
			t.Fatalf("uninstall --yes:\n%s", out)
		}
		code, r, errs := uninstallJSON(t, dsn)
		if code != 0 || len(r.Objects) != 0 || r.Removed {
			t.Fatalf("after removal: exit %d, %+v (stderr %q)", code, r, errs)
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM langs`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("langs after uninstall: %d rows, %v", n, err)
		}
		runOK(t, dsn, "migrate")
		runOK(t, dsn, "queue", "push", "mail", "x")
	})
}

// TestUninstallRemovesCreatedSchema: on PostgreSQL, the schema that
// `baton migrate` created goes with baton's objects; one that also holds
// a program's table stays.
func TestUninstallRemovesCreatedSchema(t *testing.T) {
	t.Parallel()
	{ // search_path schemas are PostgreSQL's, and cannot go through a transaction pooler
		u, err := url.Parse(batontest.NewDSN(t, "postgres"))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		base := q.Get("search_path")
		db := batontest.SQLDB(t, u.String())
		schemaDSN := func(schema string) string {
			q.Set("search_path", schema)
			u.RawQuery = q.Encode()
			t.Cleanup(func() { _, _ = db.Exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`) })
			return u.String()
		}
		exists := func(schema string) bool {
			var ok bool
			if err := db.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&ok); err != nil {
				t.Fatal(err)
			}
			return ok
		}
		for _, keep := range []bool{false, true} {
			schema := base + "_own"
			if keep {
				schema = base + "_shared"
			}
			dsn := schemaDSN(schema)
			runOK(t, dsn, "migrate")
			if keep {
				if _, err := db.Exec(`CREATE TABLE ` + schema + `.mine (id int)`); err != nil {
					t.Fatal(err)
				}
			}
			code, r, errs := uninstallJSON(t, dsn, "--yes")
			expect(t, code, errs, 0, "")
			if got := exists(schema); got != keep || r.Objects[len(r.Objects)-1].Kind == "schema" == keep {
				t.Fatalf("schema %s (program's table in it: %v): exists %v after uninstall; last object %v", schema, keep, got,
					r.Objects[len(r.Objects)-1])
			}
		}
	}
}
