package postgres

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/sqldriver"
)

// TestTurnstileTakeFollowsFastPath: migration 032's {p}turnstile_take
// carries a copy of the fast path's upsert (the uncontended path stays a
// plain statement through the pool), and so do query turnstile_acquire
// (what the function does, as one plain statement) and
// fast_acquire_many_free (many names in one plain statement). The part
// that decides a grant must read as fast_acquire's does: its ON CONFLICT
// clause up to RETURNING, the same text once spaces are folded. Likewise
// fast_acquire_many_existing carries fast_acquire_existing's SET clause.
// A change to one without the other fails here.
func TestTurnstileTakeFollowsFastPath(t *testing.T) {
	q, err := sqldriver.ParseQueryFiles("baton_", map[string]string{"now": Now}, queriesSQL, ownSQL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := migrations.ReadFile("migrations/032_turnstile_take.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	// part is the text of query name from the first from to the first to
	// after it.
	part := func(name, from, to string) string {
		stmt := fold(q[name])
		i := strings.Index(stmt, from)
		j := strings.Index(stmt[max(i, 0):], to)
		if i < 0 || j < 0 {
			t.Fatalf("%s has no %s … %s: %s", name, from, to, stmt)
		}
		return stmt[i : i+j]
	}
	upsert := part("fast_acquire", "ON CONFLICT (", " RETURNING")
	for copyName, text := range map[string]string{
		"migration 032's {p}turnstile_take": fold(strings.ReplaceAll(string(body), "{p}", "baton_")),
		"query turnstile_acquire":           fold(q["turnstile_acquire"]),
		"fast_acquire_many_free":            fold(q["fast_acquire_many_free"]),
	} {
		if !strings.Contains(text, upsert) {
			t.Errorf("%s does not carry fast_acquire's ON CONFLICT clause as it is now:\n%s", copyName, upsert)
		}
	}
	if set := part("fast_acquire_existing", "SET fence =", " WHERE"); !strings.Contains(fold(q["fast_acquire_many_existing"]), set) {
		t.Errorf("fast_acquire_many_existing does not carry fast_acquire_existing's SET clause as it is now:\n%s", set)
	}
}
