package mysql

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/batontest"
	"github.com/batonhq/baton/internal/sqldriver"
)

// TestTurnstileProceduresFollowFastPath: migrations 031 and 034's
// procedures carry copies of the fast path's statements (the uncontended
// path stays a plain statement, one round trip through the pool). The
// parts that decide a grant and a release must read as the fast path's
// do: fast_acquire's ON DUPLICATE KEY UPDATE, fast_release_name's SET and
// fast_release_ns up to its WHERE (its index hint too), the same text
// once spaces are folded. A change to one without the other fails here.
func TestTurnstileProceduresFollowFastPath(t *testing.T) {
	q, err := sqldriver.ParseQueryFiles("baton_", map[string]string{"now": Now}, queriesSQL, ownSQL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ migration, query, from, to string }{
		{"031_turnstile_calls", "fast_acquire", "ON DUPLICATE KEY UPDATE", ""},
		{"031_turnstile_calls", "fast_release_name", "SET h_session", " WHERE"},
		{"034_turnstile_release_ns", "fast_release_ns", "UPDATE", " WHERE"},
	} {
		body, err := migrations.ReadFile("migrations/" + c.migration + ".up.sql")
		if err != nil {
			t.Fatal(err)
		}
		proc := batontest.Fold(strings.ReplaceAll(string(body), "{p}", "baton_"))
		part := batontest.Clause(t, q[c.query], c.from, c.to)
		if !strings.Contains(proc, part) {
			t.Errorf("migration %s's procedures do not carry %s's %q clause as it is now:\n%s", c.migration, c.query, c.from, part)
		}
	}
}
