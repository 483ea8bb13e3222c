package errs

import (
	"errors"
	"testing"
)

// TestStreak: a streak of failures is reported once, at its first; a
// success ends it, and the next failure starts another.
func TestStreak(t *testing.T) {
	var s Streak
	fail := errors.New("down")
	var got []bool
	for _, err := range []error{nil, fail, fail, fail, nil, nil, fail, fail} {
		got = append(got, s.First(err))
	}
	want := []bool{false, true, false, false, false, false, true, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("First over nil, fail×3, nil×2, fail×2 = %v, want %v", got, want)
		}
	}
}
