package postgres

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/batontest"
)

// TestTurnstileTakeFollowsFastPath: {p}turnstile_take
// carries a copy of the fast path's upsert (the uncontended path stays a
// plain statement through the pool), and so do query turnstile_acquire
// (what the function does, as one plain statement) and
// fast_acquire_many_free (many names in one plain statement). The part
// that decides a grant must read as fast_acquire's does: its ON CONFLICT
// clause up to RETURNING, the same text once spaces are folded. Likewise
// fast_acquire_many_existing carries fast_acquire_existing's SET clause.
// A change to one without the other fails here.
func TestTurnstileTakeFollowsFastPath(t *testing.T) {
	q, err := sqlbase.LoadQueries(queries, "sql", "baton_", map[string]string{"now": Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := routines.ReadFile("sql/routines/turnstile_take.sql")
	if err != nil {
		t.Fatal(err)
	}
	upsert := batontest.Clause(t, q["fast_acquire"], "ON CONFLICT (", " RETURNING")
	for copyName, text := range map[string]string{
		"{p}turnstile_take":       batontest.Fold(strings.ReplaceAll(string(body), "{p}", "baton_")),
		"query turnstile_acquire": batontest.Fold(q["turnstile_acquire"]),
		"fast_acquire_many_free":  batontest.Fold(q["fast_acquire_many_free"]),
	} {
		if !strings.Contains(text, upsert) {
			t.Errorf("%s does not carry fast_acquire's ON CONFLICT clause as it is now:\n%s", copyName, upsert)
		}
	}
	if set := batontest.Clause(t, q["fast_acquire_existing"], "SET fence =", " WHERE"); !strings.Contains(batontest.Fold(q["fast_acquire_many_existing"]), set) {
		t.Errorf("fast_acquire_many_existing does not carry fast_acquire_existing's SET clause as it is now:\n%s", set)
	}
}
