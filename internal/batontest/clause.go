package batontest

import (
	"strings"
	"testing"
)

// Fold is SQL text with every run of white space made one space: the
// form in which a clause and its copy elsewhere (a procedure, a function,
// another query) are compared.
func Fold(s string) string { return strings.Join(strings.Fields(s), " ") }

// Clause is the folded text of stmt from the first from up to the first
// to after it (to "": to the end); the test fails when stmt has no such
// part.
func Clause(t *testing.T, stmt, from, to string) string {
	t.Helper()
	s := Fold(stmt)
	i := strings.Index(s, from)
	j := len(s) - max(i, 0)
	if to != "" {
		j = strings.Index(s[max(i, 0):], to)
	}
	if i < 0 || j < 0 {
		t.Fatalf("no %q … %q in %s", from, to, s)
	}
	return s[i : i+j]
}
