package baton_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/batontest"
)

// TestCompatibilityDocumented: docs/compatibility.md names the versions
// of the servers the tests run on (major.minor; PostgreSQL's major).
func TestCompatibilityDocumented(t *testing.T) {
	doc, err := os.ReadFile("docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		db := batontest.SQLDB(t, b.NewDSN(t))
		q := map[string]string{"sqlite": "SELECT sqlite_version()", "postgres": "SHOW server_version", "mysql": "SELECT VERSION()"}[b.Name]
		var v string
		if err := db.QueryRowContext(ctxT(t), q).Scan(&v); err != nil {
			t.Fatal(err)
		}
		var want string
		switch mm := regexp.MustCompile(`^(\d+)\.(\d+)`).FindStringSubmatch(v); {
		case mm == nil:
			t.Fatalf("%s version %q", b.Name, v)
		case b.Name == "sqlite":
			want = "SQLite " + mm[1] + "." + mm[2]
		case b.Name == "postgres":
			want = "PostgreSQL " + mm[1]
		case strings.Contains(strings.ToLower(v), "mariadb"):
			want = "MariaDB " + mm[1] + "." + mm[2]
		default:
			want = "MySQL " + mm[1] + "." + mm[2]
		}
		if !strings.Contains(string(doc), "| "+want) {
			t.Fatalf("docs/compatibility.md does not list %q (server reports %q) among the versions CI runs", want, v)
		}
	})
}
