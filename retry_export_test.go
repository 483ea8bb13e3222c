package baton

import "time"

// RetryHorizon is how long p retries a message that fails each of its
// maxAttempts attempts, without jitter.
func RetryHorizon(p RetryPolicy, maxAttempts int) time.Duration {
	return p.backoff().Horizon(maxAttempts)
}
