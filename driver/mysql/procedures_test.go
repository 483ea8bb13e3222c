package mysql

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/sqldriver"
)

// TestTurnstileProceduresFollowFastPath: migration 031's procedures carry
// copies of the fast path's statements (the uncontended path stays a
// plain statement, one round trip through the pool). The parts that
// decide a grant and a release must read as the fast path's do:
// fast_acquire's ON DUPLICATE KEY UPDATE and fast_release_name's SET, the
// same text once spaces are folded. A change to one without the other
// fails here.
func TestTurnstileProceduresFollowFastPath(t *testing.T) {
	q, err := sqldriver.ParseQueryFiles("baton_", map[string]string{"now": Now}, queriesSQL, ownSQL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := migrations.ReadFile("migrations/031_turnstile_calls.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	proc := fold(strings.ReplaceAll(string(body), "{p}", "baton_"))
	for _, c := range []struct{ query, from, to string }{
		{"fast_acquire", "ON DUPLICATE KEY UPDATE", ";"},
		{"fast_release_name", "SET h_session", " WHERE"},
	} {
		stmt := fold(q[c.query])
		i := strings.Index(stmt, c.from)
		if i < 0 {
			t.Fatalf("%s has no %q", c.query, c.from)
		}
		part := stmt[i:]
		if j := strings.Index(part, c.to); j >= 0 {
			part = part[:j]
		}
		if !strings.Contains(proc, part) {
			t.Errorf("migration 031's procedures do not carry %s's %q clause as it is now:\n%s", c.query, c.from, part)
		}
	}
}
