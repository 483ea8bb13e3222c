package main

import (
	"database/sql"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/batontest"
)

// catalog lists every table (and PostgreSQL function) of a test database.
func catalog(t *testing.T, db *sql.DB, backend string) []string {
	t.Helper()
	q := map[string]string{
		"sqlite": `SELECT type || ' ' || name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY 1`,
		"postgres": `SELECT 'table ' || tablename FROM pg_tables WHERE schemaname = current_schema()
			UNION ALL SELECT 'function ' || p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema()
			UNION ALL SELECT 'sequence ' || sequencename FROM pg_sequences WHERE schemaname = current_schema() ORDER BY 1`,
		"mysql": `SELECT CONCAT(table_type, ' ', table_name) FROM information_schema.tables WHERE table_schema = DATABASE()
			UNION ALL SELECT CONCAT('trigger ', trigger_name) FROM information_schema.triggers WHERE trigger_schema = DATABASE()
			UNION ALL SELECT CONCAT('routine ', routine_name) FROM information_schema.routines WHERE routine_schema = DATABASE() ORDER BY 1`,
	}[backend]
	return batontest.Strings(t, db, q)
}

// TestDemoCleansUp: `baton demo` on a user's database runs every scenario
// (table-change events included) and leaves the database as it found it, an application table and
// baton's own tables of another prefix included, and says so.
func TestDemoCleansUp(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		// The user's own things: baton's tables under the default prefix,
		// with a queued message, and a table of the application.
		if code, _, errs := run(t, dsn, "queue", "push", "mail", "keep me"); code != 0 {
			t.Fatalf("push: %s", errs)
		}
		db := batontest.SQLDB(t, dsn)
		if _, err := db.Exec("CREATE TABLE app_orders (id INTEGER PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		before := catalog(t, db, b.Name)

		cmd := exec.Command(bin, "--dsn", dsn, "demo")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("demo: %v\n%s", err, out)
		}
		for _, want := range []string{"in insert order: true", "0 handled twice", "All scenarios ran as described",
			"Cleaned up: dropped the demo's", "Nothing else was touched"} {
			if !strings.Contains(string(out), want) {
				t.Fatalf("demo output lacks %q:\n%s", want, out)
			}
		}
		if after := catalog(t, db, b.Name); !slices.Equal(before, after) {
			t.Fatalf("the demo left the database changed:\nbefore %v\nafter  %v", before, after)
		}
		stats := runOK(t, dsn, "queue", "stats", "--json")
		if !strings.Contains(stats, `"mail"`) || strings.Contains(stats, "t_queue") || strings.Contains(stats, `"messages"`) {
			t.Fatalf("queues after the demo: %s", stats)
		}
	})
}
