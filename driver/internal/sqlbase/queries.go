// Package sqlbase implements driver.Tx and most of driver.Driver once, on
// database/sql, for every backend. A backend supplies a Dialect: its named
// queries (sql/<slice>.sql, the same files and names in every dialect), its
// bind-variable style and hooks for the few operations whose shape differs
// (wake-ups, migration locking, the fast paths).
package sqlbase

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
)

var nameLine = regexp.MustCompile(`(?m)^-- name: ([a-z0-9_]+)\s*$`)

// ParseQueries splits a query file into named queries. Each query starts at
// a line "-- name: NAME" and runs to its last line before the next such
// line that is not a comment (a comment there heads what follows). Macros
// are expanded: {p} becomes the table prefix and every key of macros its
// value.
func ParseQueries(src, prefix string, macros map[string]string) (map[string]string, error) {
	out := map[string]string{}
	locs := nameLine.FindAllStringSubmatchIndex(src, -1)
	for i, loc := range locs {
		name := src[loc[2]:loc[3]]
		end := len(src)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := strings.TrimSuffix(trimComments(src[loc[1]:end]), ";")
		body = strings.ReplaceAll(body, "{p}", prefix)
		for k, v := range macros {
			body = strings.ReplaceAll(body, "{"+k+"}", v)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("query %q defined twice", name)
		}
		out[name] = body
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no queries found")
	}
	return out, nil
}

// trimComments is s without its trailing comment and blank lines, trimmed.
func trimComments(s string) string {
	s = strings.TrimSpace(s)
	for {
		i := strings.LastIndexByte(s, '\n')
		if !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "--") {
			return s
		}
		s = strings.TrimSpace(s[:i+1])
	}
}

// LoadQueries parses a backend's query files, dir/*.sql in fsys (one per
// slice), into one set, each file's text passed through clean first when
// clean is not nil. A name defined twice, in one file or in two, is an
// error.
func LoadQueries(fsys fs.FS, dir, prefix string, macros map[string]string, clean func(string) string) (map[string]string, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	from := map[string]string{}
	for _, f := range files {
		src, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		text := string(src)
		if clean != nil {
			text = clean(text)
		}
		q, err := ParseQueries(text, prefix, macros)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for name, body := range q {
			if first, dup := from[name]; dup {
				return nil, fmt.Errorf("query %q defined in %s and %s", name, first, f)
			}
			out[name], from[name] = body, f
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no queries in %s/*.sql", dir)
	}
	return out, nil
}

var listMarker = regexp.MustCompile(`\{list(\d*)\}`)

// expandList replaces the marker {list} in q with n bind variables whose
// numbering (for $N styles) starts at first; a marker {listN} starts at N
// instead.
func expandList(q string, numbered bool, first, n int) string {
	if m := listMarker.FindStringSubmatch(q); m != nil && m[1] != "" {
		first, _ = strconv.Atoi(m[1])
		q = strings.Replace(q, m[0], "{list}", 1)
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if numbered {
			b.WriteString("$" + strconv.Itoa(first+i))
		} else {
			b.WriteByte('?')
		}
	}
	if n == 0 {
		b.WriteString("NULL")
	}
	return strings.ReplaceAll(q, "{list}", b.String())
}

// expandRows replaces the marker {rows} in q with n tuples of width bind
// variables each, numbered from 1 for $N styles: the VALUES of a
// multi-row insert.
func expandRows(q string, numbered bool, width, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for j := 0; j < width; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			if numbered {
				b.WriteString("$" + strconv.Itoa(i*width+j+1))
			} else {
				b.WriteByte('?')
			}
		}
		b.WriteByte(')')
	}
	return strings.ReplaceAll(q, "{rows}", b.String())
}

// ExpandList is expandList for backends that build a listed query
// themselves.
func ExpandList(q string, numbered bool, first, n int) string {
	return expandList(q, numbered, first, n)
}
