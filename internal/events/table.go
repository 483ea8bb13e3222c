package events

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/errs"
)

var bareIdentRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)
})

// ParseTable checks a table name as a user writes it (table or
// schema.table, each part bare or double-quoted) and returns the
// canonical name baton stores: the parts, unquoted, joined by a dot.
func ParseTable(table string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: table %s: %s (write table, schema.table, or \"Quoted Name\")", errs.ErrInvalid, errs.Quote(table), why)
	}
	if !utf8.ValidString(table) {
		return "", bad("not valid UTF-8")
	}
	var parts []string
	rest := table
	for {
		part, after, why := tablePart(rest)
		if why != "" {
			return "", bad(why)
		}
		parts, rest = append(parts, part), after
		if rest == "" {
			break
		}
		if rest[0] != '.' || len(parts) == 2 {
			return "", bad("at most schema.table")
		}
		rest = rest[1:]
	}
	return strings.Join(parts, "."), nil
}

// tablePart reads one part of a table name (quoted or bare) off the front
// of s; why says what is wrong with it.
func tablePart(s string) (part, rest, why string) {
	if !strings.HasPrefix(s, `"`) {
		return barePart(s)
	}
	part, rest, ok := unquote(s)
	switch {
	case !ok:
		return "", "", "unterminated quote"
	case part == "" || len(part) > 63 || strings.ContainsAny(part, ".\"\x00"):
		return "", "", "a quoted name must be 1 to 63 bytes without '.', '\"' or NUL"
	}
	return part, rest, ""
}

// barePart reads an unquoted part of a table name off the front of s.
func barePart(s string) (part, rest, why string) {
	end := strings.IndexByte(s, '.')
	if end < 0 {
		end = len(s)
	}
	if !bareIdentRE().MatchString(s[:end]) {
		return "", "", "use letters, digits and '_', or quote the name"
	}
	return s[:end], s[end:], ""
}

// unquote reads a double-quoted identifier ("" for a quote) off the front
// of s; ok is false when its closing quote is missing.
func unquote(s string) (name, rest string, ok bool) {
	var b strings.Builder
	i := 1
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return "", "", false
		}
		b.WriteString(s[i : i+j])
		i += j + 1
		if !strings.HasPrefix(s[i:], `"`) {
			return b.String(), s[i:], true
		}
		b.WriteByte('"')
		i++
	}
}
