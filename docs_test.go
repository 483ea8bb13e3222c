package baton_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/batontest"
)

// TestDocsStandAlone: the README, the changelog and docs/ link only to
// files inside the repository that exist (web addresses aside), and name
// no path outside it.
func TestDocsStandAlone(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "README.md", "CHANGELOG.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	upward := regexp.MustCompile(`(?:^|[\s"'(\x60])((?:\.\./)+[^\s"')\x60]*)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(filepath.Join(root, f))
		inside := func(target string) (string, bool) {
			p := filepath.Clean(filepath.Join(dir, target))
			return p, p == root || strings.HasPrefix(p, root+string(filepath.Separator))
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") ||
				strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p, ok := inside(target)
			if !ok {
				t.Errorf("%s links outside the repository: %s", f, m[1])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to a missing file: %s", f, m[1])
			}
		}
		for _, m := range upward.FindAllStringSubmatch(string(b), -1) {
			p, ok := inside(strings.TrimRight(m[1], ".,;:"))
			if !ok {
				t.Errorf("%s names a path outside the repository: %s", f, m[1])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s names a path that is not in the repository: %s", f, m[1])
			}
		}
	}
}

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
