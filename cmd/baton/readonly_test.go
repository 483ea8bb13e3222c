package main

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/batontest"
)

// batonTables counts the tables of baton's (prefix baton_) in the
// database, schema or file a test DSN names.
func batonTables(t *testing.T, b batontest.Backend, dsn string) int {
	t.Helper()
	q := map[string]string{
		"sqlite":   `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'baton\_%' ESCAPE '\'`,
		"postgres": `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'baton\_%'`,
		"mysql":    `SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'baton\_%'`,
	}[b.Name]
	var n int
	if err := batontest.SQLDB(t, dsn).QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReadOnlyCommandsInstallNothing: the commands that only read never
// create baton's schema: on an empty database they fail, saying that baton
// is not installed and how to install it; migrate status says so beside
// its table.
func TestReadOnlyCommandsInstallNothing(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		for _, args := range [][]string{
			{"locks"}, {"locks", "--json"}, {"queue", "stats"}, {"queue", "stats", "q"}, {"queue", "list"},
			{"queue", "get", "1"}, {"queue", "dead", "q"}, {"events", "list"},
		} {
			code, out, errs := run(t, dsn, args...)
			if code != exitError || out != "" || !strings.Contains(errs, "not installed") || !strings.Contains(errs, "baton migrate") {
				t.Errorf("baton %v on an empty database: exit %d, stdout %q, stderr %q; want 1 saying baton is not installed and to run baton migrate",
					args, code, out, errs)
			}
		}
		code, out, errs := run(t, dsn, "migrate", "status")
		expect(t, code, "", 0, "")
		if !strings.Contains(out, "pending") || !strings.Contains(errs, "not installed") {
			t.Errorf("migrate status: stdout %q, stderr %q", out, errs)
		}
		if n := batonTables(t, b, dsn); n != 0 {
			t.Fatalf("read-only commands created %d baton tables", n)
		}
		runOK(t, dsn, "migrate")
		out = runOK(t, dsn, "locks")
		if !strings.Contains(out, "no locks") {
			t.Fatalf("locks after migrate: %q", out)
		}
	})
}

// TestPostgresDSNWithoutDatabase: a PostgreSQL DSN that names no database
// is refused before connecting (the server would pick the user's
// database, often postgres, and baton would install itself there).
func TestPostgresDSNWithoutDatabase(t *testing.T) {
	u, err := url.Parse(batontest.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	// A schema that does not exist: should the check fail, nothing is
	// installed in the server's default database.
	u.Path, u.RawQuery = "", "search_path=bt_never_created"
	for _, path := range []string{"", "/"} {
		u.Path = path
		for _, args := range [][]string{{"locks"}, {"queue", "push", "q", "x"}} {
			code, _, errs := runWith(t, u.String(), "", []string{"PGDATABASE="}, args...)
			expect(t, code, errs, exitUsage, "names no database")
		}
	}
}
