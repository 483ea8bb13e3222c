// Package sqlbase implements driver.Tx and most of driver.Driver once, on
// database/sql, for every backend. A backend supplies a Dialect: its named
// queries (queries.sql, the same names in every dialect, and a file of the
// dialect's own), its bind-variable
// style and hooks for the few operations whose shape differs (wake-ups,
// migration locking, the fast paths).
package sqlbase

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var nameLine = regexp.MustCompile(`(?m)^-- name: ([a-z0-9_]+)\s*$`)

// ParseQueries splits a query file into named queries. Each query starts at
// a line "-- name: NAME" and runs to the next such line. Macros are expanded:
// {p} becomes the table prefix and every key of macros its value.
func ParseQueries(src, prefix string, macros map[string]string) (map[string]string, error) {
	out := map[string]string{}
	locs := nameLine.FindAllStringSubmatchIndex(src, -1)
	for i, loc := range locs {
		name := src[loc[2]:loc[3]]
		end := len(src)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := strings.TrimSpace(src[loc[1]:end])
		body = strings.TrimSuffix(body, ";")
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

// ParseQueryFiles parses a dialect's query files (queries.sql, the names
// every dialect has, then the dialect's own) into one set; a name defined
// in two files is an error.
func ParseQueryFiles(prefix string, macros map[string]string, srcs ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, src := range srcs {
		q, err := ParseQueries(src, prefix, macros)
		if err != nil {
			return nil, err
		}
		for name, body := range q {
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("query %q defined in two files", name)
			}
			out[name] = body
		}
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

// ExpandList is expandList for backends that build a listed query
// themselves.
func ExpandList(q string, numbered bool, first, n int) string {
	return expandList(q, numbered, first, n)
}
