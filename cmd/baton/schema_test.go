package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/batontest"
)

// TestMigrateCreatesSchema: a PostgreSQL DSN whose search_path names a
// schema that does not exist fails with an error naming the schema and the
// fix, until `baton migrate` creates it (and says so).
func TestMigrateCreatesSchema(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label == "pgbouncer" {
			t.Skip("search_path cannot go through a transaction pooler (TestPoolerRefusesSearchPath)")
		}
		if b.Name != "postgres" {
			t.Skip("search_path schemas are PostgreSQL's")
		}
		u, err := url.Parse(b.NewDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		schema := q.Get("search_path") + "_New"
		q.Set("search_path", `"`+schema+`"`)
		u.RawQuery = q.Encode()
		dsn := u.String()
		db := batontest.SQLDB(t, dsn)
		t.Cleanup(func() { _, _ = db.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`) })

		code, _, errs := run(t, dsn, "queue", "push", "mail", "x")
		if code == 0 || !strings.Contains(errs, `"`+schema+`"`) || !strings.Contains(errs, "baton migrate") {
			t.Fatalf("push into a missing schema: exit %d, stderr %q: want a failure naming the schema and baton migrate", code, errs)
		}
		code, out, errs := run(t, dsn, "migrate")
		expect(t, code, errs, 0, "")
		if !strings.Contains(out, "created schema "+schema+"\n") {
			t.Fatalf("migrate did not say it created the schema:\n%s", out)
		}
		code, out, errs = run(t, dsn, "migrate")
		expect(t, code, errs, 0, "")
		if strings.Contains(out, "created schema") {
			t.Fatalf("second migrate created the schema again:\n%s", out)
		}
		code, _, errs = run(t, dsn, "queue", "push", "mail", "x")
		expect(t, code, errs, 0, "")
	})
}
