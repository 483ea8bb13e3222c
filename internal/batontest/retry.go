package batontest

import (
	"testing"
	"time"
)

// Retry calls f every 50 ms until it succeeds (a server may be
// restarting); still failing after within, it fails the test with what
// and f's last error.
func Retry(t testing.TB, within time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
