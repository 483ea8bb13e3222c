package postgres

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/sqldriver"
)

// TestTurnstileTakeFollowsFastPath: migration 032's {p}turnstile_take
// carries a copy of the fast path's upsert (the uncontended path stays a
// plain statement through the pool), and so do query turnstile_acquire,
// which does what the function does as one plain statement, and
// fast_acquire_many_free
// (for many names in one plain statement). The part that decides a grant must
// read as fast_acquire's does: its ON CONFLICT clause up to RETURNING,
// the same text once spaces are folded. A change to one without the
// other fails here.
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
	fn := fold(strings.ReplaceAll(string(body), "{p}", "baton_"))
	stmt := fold(q["fast_acquire"])
	i := strings.Index(stmt, "ON CONFLICT (")
	j := strings.Index(stmt, " RETURNING")
	if i < 0 || j < i {
		t.Fatalf("fast_acquire has no ON CONFLICT … RETURNING: %s", stmt)
	}
	if part := stmt[i:j]; !strings.Contains(fn, part) {
		t.Errorf("migration 032's {p}turnstile_take does not carry fast_acquire's ON CONFLICT clause as it is now:\n%s", part)
	}
	if part := stmt[i:j]; !strings.Contains(fold(q["turnstile_acquire"]), part) {
		t.Errorf("query turnstile_acquire does not carry fast_acquire's ON CONFLICT clause as it is now:\n%s", part)
	}
	if part := stmt[i:j]; !strings.Contains(fold(q["fast_acquire_many_free"]), part) {
		t.Errorf("fast_acquire_many_free does not carry fast_acquire's ON CONFLICT clause as it is now:\n%s", part)
	}
}
