package queue

import (
	"testing"
	"time"
)

// TestBackoffPolynomial: the default waits attempt⁴ seconds, within its
// jitter, and its horizon over DefaultMaxAttempts is the documented one.
func TestBackoffPolynomial(t *testing.T) {
	var b Backoff
	for a, want := range map[int]time.Duration{1: time.Second, 2: 16 * time.Second, 3: 81 * time.Second,
		10: 10_000 * time.Second, 24: 331_776 * time.Second, 25: 390_625 * time.Second, 1000: MaxDelay} {
		if got := b.Filled().Nominal(a); got != want {
			t.Errorf("attempt %d: nominal %v, want %v", a, got, want)
		}
		for range 20 {
			if d := b.Delay(a); d < want*8/10 || d > want*12/10 {
				t.Errorf("attempt %d: delay %v outside %v ±20%%", a, d, want)
			}
		}
	}
	if PolynomialHorizon != 1_763_020*time.Second {
		t.Fatal("the documented horizon changed")
	}
	if got := b.Horizon(DefaultMaxAttempts); got != PolynomialHorizon {
		t.Errorf("horizon %v, want %v", got, PolynomialHorizon)
	}
	if d := (Backoff{Jitter: -1}).Delay(3); d != 81*time.Second {
		t.Errorf("no jitter: %v", d)
	}
}

// TestBackoffExponential: Base or Max makes the doubling policy.
func TestBackoffExponential(t *testing.T) {
	b := Backoff{Base: time.Second, Jitter: -1}
	for a, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 10: 512 * time.Second, 11: 10 * time.Minute, 200: 10 * time.Minute} {
		if got := b.Delay(a); got != want {
			t.Errorf("attempt %d: %v, want %v", a, got, want)
		}
	}
	if got := (Backoff{Max: time.Nanosecond, Jitter: -1}).Delay(5); got != time.Nanosecond {
		t.Errorf("Max alone: %v", got)
	}
	if got := (Backoff{Base: time.Hour, Max: 1 << 62, Jitter: -1}).Delay(100); got != MaxDelay {
		t.Errorf("huge Max: %v", got)
	}
	// v0.1.0's default, 1 s doubling to 10 min: dead after about 2.6 hours.
	if got := (Backoff{Base: time.Second}).Horizon(DefaultMaxAttempts); got != 9423*time.Second {
		t.Errorf("exponential horizon %v", got)
	}
}
