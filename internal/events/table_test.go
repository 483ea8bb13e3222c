package events

import (
	"errors"
	"testing"

	"github.com/batonhq/baton/internal/errs"
)

// TestParseTable: names are stored unquoted, parts joined by a dot; what
// could make a stored name ambiguous is refused.
func TestParseTable(t *testing.T) {
	for in, want := range map[string]string{"orders": "orders", "app.orders": "app.orders",
		`"Odd Table-1"`: "Odd Table-1", `"a"."b"`: "a.b"} {
		if got, err := ParseTable(in); err != nil || got != want {
			t.Errorf("ParseTable(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a.b.c", `"unterminated`, "x;drop table y", `"a.b"`, `"x""y"`, `""`, "\xff"} {
		if _, err := ParseTable(in); !errors.Is(err, errs.ErrInvalid) {
			t.Errorf("ParseTable(%q): %v, want ErrInvalid", in, err)
		}
	}
}
