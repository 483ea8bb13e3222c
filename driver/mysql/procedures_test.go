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

// TestReleaseProcedureFollowsRequest: migration 035's hand-on carries
// copies of {p}request's (migration 024) adoption of the fast holder and
// of its grant rule's bookkeeping, and of fast_clear_hints_ns's
// SET clause: the same text once spaces are folded. A change to one
// without the other fails here.
func TestReleaseProcedureFollowsRequest(t *testing.T) {
	q, err := sqldriver.ParseQueryFiles("baton_", map[string]string{"now": Now}, queriesSQL, ownSQL)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		body, err := migrations.ReadFile("migrations/" + name + ".up.sql")
		if err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(string(body), "{p}", "baton_")
	}
	request, release := read("024_lock_calls"), batontest.Fold(read("035_release_commit"))
	for _, part := range []string{
		batontest.Clause(t, request, "INSERT INTO baton_lock_fast (kind, ns, name, fence, slow)", "-- lockcore.Grants"),
		batontest.Clause(t, request, "IF v_wmode = 'W' AND FIND_IN_SET(v_wsess, v_gw) = 0 THEN", "END LOOP;"),
		batontest.Clause(t, q["fast_clear_hints_ns"], "UPDATE", " WHERE"),
	} {
		if !strings.Contains(release, part) {
			t.Errorf("migration 035's procedures do not carry this clause as it is now:\n%s", part)
		}
	}
}
