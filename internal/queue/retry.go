package queue

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is the wait between a message's attempts (baton.RetryPolicy
// without its function). With neither Base nor Max it is polynomial:
// attempt⁴ seconds after attempt failed (River's default), which over
// DefaultMaxAttempts spans about three weeks (PolynomialHorizon). With
// Base or Max it is exponential: Base × 2^(attempt-1), at most Max. Either
// is spread by ±Jitter (a fraction; negative: none).
type Backoff struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64
}

// MaxDelay bounds every delay a Backoff computes: attempt⁴ seconds
// reaches a year at attempt 75.
const MaxDelay = 365 * 24 * time.Hour

// PolynomialHorizon is how long the polynomial Backoff retries a message
// that fails every one of DefaultMaxAttempts attempts, from the end of
// its first attempt to the start of its last, without jitter: the sum of
// n⁴ seconds for n from 1 to 24, 1,763,020 s (20 days 9 h 43 min 40 s).
const PolynomialHorizon = 1_763_020 * time.Second

// Filled is b with the defaults set: ±20% jitter, and for an exponential
// backoff a 1 s base and 10 min at most.
func (b Backoff) Filled() Backoff {
	if b.Jitter == 0 {
		b.Jitter = 0.2
	}
	if b.Exponential() {
		if b.Base <= 0 {
			b.Base = time.Second
		}
		if b.Max <= 0 {
			b.Max = 10 * time.Minute
		}
	}
	return b
}

// Exponential says whether b doubles (Base or Max set) rather than
// growing as attempt⁴.
func (b Backoff) Exponential() bool { return b.Base > 0 || b.Max > 0 }

// Nominal is the wait after attempt failed, without jitter (b filled).
func (b Backoff) Nominal(attempt int) time.Duration {
	attempt = max(attempt, 1)
	if !b.Exponential() {
		s := math.Pow(float64(attempt), 4)
		return min(time.Duration(min(s, MaxDelay.Seconds())*float64(time.Second)), MaxDelay)
	}
	d := b.Base
	for i := 1; i < attempt && d < b.Max && d < MaxDelay; i++ {
		d *= 2
	}
	return min(d, b.Max, MaxDelay)
}

// Delay is the wait after attempt failed: Nominal spread by the jitter.
func (b Backoff) Delay(attempt int) time.Duration {
	b = b.Filled()
	d := b.Nominal(attempt)
	if b.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + b.Jitter*(2*rand.Float64()-1)))
	}
	return max(d, 0)
}

// Horizon is the sum of the nominal waits of a message that fails each of
// its maxAttempts attempts: how long after its first failure it becomes a
// dead letter, handler time and jitter aside.
func (b Backoff) Horizon(maxAttempts int) time.Duration {
	b = b.Filled()
	var sum time.Duration
	for a := 1; a < maxAttempts; a++ {
		sum += b.Nominal(a)
	}
	return sum
}
