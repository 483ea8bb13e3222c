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

var (
	nameLine = regexp.MustCompile(`^-- name: ([a-z0-9_]+)\s*$`)
	onlyLine = regexp.MustCompile(`^-- only ([a-z, ]+): \S`)
)

// query is where a named query is defined, and the dialects its "-- only"
// line (the line before its name) says have it; nil when it has none.
type query struct {
	file string
	only []string
}

// sliceFiles lists a dialect's query files, sql/*.sql, by base name.
func sliceFiles(t *testing.T, d string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(d, "sql", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, p := range paths {
		files = append(files, filepath.Base(p))
	}
	return files
}

// dialectQueries reads a dialect's query files and reports a name defined
// twice.
func dialectQueries(t *testing.T, d string) map[string]query {
	t.Helper()
	out := map[string]query{}
	eachFile(t, filepath.Join(d, "sql", "*.sql"), func(path, src string) {
		f := filepath.Base(path)
		lines := strings.Split(src, "\n")
		for i, line := range lines {
			m := nameLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			q := query{file: f}
			if i > 0 {
				if o := onlyLine.FindStringSubmatch(lines[i-1]); o != nil {
					q.only = strings.Split(o[1], ", ")
				}
			}
			if prev, dup := out[m[1]]; dup {
				t.Errorf("%s: %s is defined in sql/%s and sql/%s", d, m[1], prev.file, f)
			}
			out[m[1]] = q
		}
	})
	if len(out) == 0 {
		t.Fatalf("%s: no queries in sql/*.sql", d)
	}
	return out
}

// TestSameQueryFiles: every backend has the same query files, one per
// slice (sql/sessions.sql, sql/locks.sql, ...), and nothing else holds
// queries. A query several dialects have has the same name and sits in
// the same file in each, so that a reviewer compares one backend's query
// with another's by name; a query only some dialects have says which on
// the line before its name ("-- only postgres, mysql: why"), and a query
// without that line is in every dialect. No name is defined twice in a
// backend (the loader refuses that too).
func TestSameQueryFiles(t *testing.T) {
	want := sliceFiles(t, dialects[0])
	where := map[string]map[string]query{} // name -> dialect -> query
	for _, d := range dialects {
		if got := sliceFiles(t, d); !slices.Equal(got, want) {
			t.Errorf("%s/sql has %v, %s/sql %v", d, got, dialects[0], want)
		}
		if loose, _ := filepath.Glob(filepath.Join(d, "*.sql")); len(loose) > 0 {
			t.Errorf("query files outside %s/sql: %v", d, loose)
		}
		for name, q := range dialectQueries(t, d) {
			if where[name] == nil {
				where[name] = map[string]query{}
			}
			where[name][d] = q
		}
	}
	for name, in := range where {
		var has, files []string
		for _, d := range dialects {
			if q, ok := in[d]; ok {
				has = append(has, d)
				if !slices.Contains(files, q.file) {
					files = append(files, q.file)
				}
			}
		}
		if len(files) > 1 {
			t.Errorf("%s is in different files: %v in %v", name, files, has)
		}
		for _, d := range has {
			only := in[d].only
			switch {
			case only == nil && len(has) < len(dialects):
				t.Errorf("%s/sql/%s: %s is only in %v; say so on the line before its name (-- only %s: why)", d, in[d].file, name, has, strings.Join(has, ", "))
			case only != nil && (len(has) == len(dialects) || !slices.Equal(only, has)):
				t.Errorf("%s/sql/%s: %s says only %v, but %v have it", d, in[d].file, name, only, has)
			}
		}
	}
}

var migrationFile = regexp.MustCompile(`^(\d{3})_[a-z0-9_]+\.up\.sql$`)

// TestSameMigrationNumbers: the dialects' migrations are numbered from 001
// up, the same numbers in each (a dialect that needs nothing for a change
// has an empty file), so a version means one change everywhere; a gap is
// allowed (branches number their migrations apart until they are merged).
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
			if (i == 0 && n != 1) || (i > 0 && n == nums[i-1]) {
				t.Fatalf("%s/migrations: number %03d at position %d: numbers start at 001 and differ", d, n, i+1)
			}
		}
		if first == nil {
			first = nums
		} else if !slices.Equal(nums, first) {
			t.Errorf("%s has migrations %v, sqlite %v", d, nums, first)
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
		eachFile(t, filepath.Join(d, "migrations", "*.sql"), func(f, src string) {
			if m := routineDef.FindStringSubmatch(src); m != nil {
				t.Errorf("%s defines the routine {p}%s: it belongs in %s/sql/routines/%s.sql", f, m[1], d, m[1])
			}
		})
		eachFile(t, filepath.Join(d, "sql", "routines", "*"), func(f, src string) {
			name, ok := strings.CutSuffix(filepath.Base(f), ".sql")
			defs := routineDef.FindAllStringSubmatch(src, -1)
			if !ok || len(defs) != 1 || defs[0][1] != name || triggerDef.MatchString(src) {
				t.Errorf("%s: want one definition, of {p}%s, and no trigger; found %v", f, name, defs)
			}
		})
	}
}

// eachFile calls f with the path and the contents of each file pattern
// matches, in the order filepath.Glob lists them.
func eachFile(t *testing.T, pattern string, f func(path, src string)) {
	t.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f(p, string(src))
	}
}
