package driver_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var dialects = []string{"sqlite", "postgres", "mysql"}

var nameLine = regexp.MustCompile(`(?m)^-- name: ([a-z0-9_]+)\s*$`)

func queryNames(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range nameLine.FindAllStringSubmatch(string(src), -1) {
		names = append(names, m[1])
	}
	sort.Strings(names)
	return names
}

// TestSameQueryNames: every dialect's queries.sql defines the same names,
// so that a reviewer compares one backend's query with another's by name;
// what only one dialect has lives in its own file (sqlite.sql, ...) under
// a name queries.sql does not use.
func TestSameQueryNames(t *testing.T) {
	want := queryNames(t, filepath.Join("sqlite", "queries.sql"))
	if len(want) == 0 {
		t.Fatal("no queries in sqlite/queries.sql")
	}
	for _, d := range dialects {
		got := queryNames(t, filepath.Join(d, "queries.sql"))
		for _, n := range got {
			if !slices.Contains(want, n) {
				t.Errorf("%s/queries.sql defines %s, which sqlite/queries.sql does not (move it to %s/%s.sql)", d, n, d, d)
			}
		}
		for _, n := range want {
			if !slices.Contains(got, n) {
				t.Errorf("%s/queries.sql lacks %s, which sqlite/queries.sql defines", d, n)
			}
		}
		for _, n := range queryNames(t, filepath.Join(d, d+".sql")) {
			if slices.Contains(got, n) {
				t.Errorf("%s is in both %s/queries.sql and %s/%s.sql", n, d, d, d)
			}
		}
	}
}

var migrationFile = regexp.MustCompile(`^(\d{3})_[a-z0-9_]+\.up\.sql$`)

// TestSameMigrationNumbers: the dialects' migrations are numbered 001, 002,
// … without a gap, the same numbers in each (a dialect that needs nothing
// for a change has an empty file), so a version means one change everywhere.
func TestSameMigrationNumbers(t *testing.T) {
	var first []int
	for _, d := range dialects {
		entries, err := os.ReadDir(filepath.Join(d, "migrations"))
		if err != nil {
			t.Fatal(err)
		}
		var nums []int
		for _, e := range entries {
			m := migrationFile.FindStringSubmatch(e.Name())
			if m == nil {
				t.Errorf("%s/migrations/%s: not NNN_name.up.sql", d, e.Name())
				continue
			}
			n, _ := strconv.Atoi(m[1])
			nums = append(nums, n)
		}
		sort.Ints(nums)
		for i, n := range nums {
			if n != i+1 {
				t.Fatalf("%s/migrations: number %03d where %03d comes next", d, n, i+1)
			}
		}
		if first == nil {
			first = nums
		} else if len(nums) != len(first) {
			t.Errorf("%s has migrations 001-%03d, sqlite 001-%03d", d, len(nums), len(first))
		}
	}
}

var (
	routineDef = regexp.MustCompile(`(?i)\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\s+\{p\}([a-z0-9_]+)`)
	triggerDef = regexp.MustCompile(`(?i)\bCREATE\s+TRIGGER\b`)
)

// TestOneDefinitionPerRoutine: every stored routine is defined once, in
// sql/routines/NAME.sql, which defines {p}NAME and nothing else; no
// migration defines a routine (migrations hold tables, indexes, views and
// data moves; Migrate re-creates a routine when its file changes).
func TestOneDefinitionPerRoutine(t *testing.T) {
	for _, d := range dialects {
		migs, err := filepath.Glob(filepath.Join(d, "migrations", "*.sql"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range migs {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if m := routineDef.FindStringSubmatch(string(src)); m != nil {
				t.Errorf("%s defines the routine {p}%s: it belongs in %s/sql/routines/%s.sql", f, m[1], d, m[1])
			}
		}
		files, err := filepath.Glob(filepath.Join(d, "sql", "routines", "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			name, ok := strings.CutSuffix(filepath.Base(f), ".sql")
			defs := routineDef.FindAllStringSubmatch(string(src), -1)
			if !ok || len(defs) != 1 || defs[0][1] != name || triggerDef.MatchString(string(src)) {
				t.Errorf("%s: want one definition, of {p}%s, and no trigger; found %v", f, name, defs)
			}
		}
	}
}
