package baton

import (
	"fmt"
	"reflect"
	"time"

	mq "github.com/batonhq/baton/internal/queue"
)

// RetryPolicy is the wait between a message's attempts. The zero value
// is the default: attempt⁴ seconds after attempt failed (1 s, 16 s,
// 81 s, 4 min 16 s, ...; River's default), so that a message that fails
// every one of DefaultMaxAttempts (25) attempts is retried for 20 days
// 9 h 43 min 40 s (1,763,020 s, the sum of n⁴ s for n from 1 to 24)
// before it becomes a dead letter: an outage of hours or days
// dead-letters nothing. With Base or Max set it is exponential instead:
// Base × 2^(attempt-1), at most Max (defaults 1 s and 10 min, a horizon
// of about 2.6 hours over 25 attempts). Either is spread by ±Jitter and
// never exceeds a year. Next, when set, replaces both.
type RetryPolicy struct {
	// Base is the exponential policy's first wait (default 1 s when Max
	// is set).
	Base time.Duration
	// Max bounds the exponential policy's waits (default 10 min when
	// Base is set).
	Max time.Duration
	// Jitter spreads each wait by up to ± this fraction of it (default
	// 0.2; negative: none).
	Jitter float64
	// Next, when set, is the policy (River's NextRetry): the wait before
	// the next attempt of m, whose attempt m.Attempt failed (m.Errors
	// holds the records of the earlier ones). A negative wait is 0.
	Next func(m *Message) time.Duration
}

// fill sets the defaults of the backoff's fields.
func (p *RetryPolicy) fill() {
	b := p.backoff().Filled()
	p.Base, p.Max, p.Jitter = b.Base, b.Max, b.Jitter
}

func (p RetryPolicy) backoff() mq.Backoff {
	return mq.Backoff{Base: p.Base, Max: p.Max, Jitter: p.Jitter}
}

// Delay is the wait the policy gives m after its attempt m.Attempt
// failed, jitter included.
func (p RetryPolicy) Delay(m *Message) time.Duration {
	if p.Next != nil {
		return max(p.Next(m), 0)
	}
	return p.backoff().Delay(m.Attempt)
}

// isZero says whether p is the zero value (a kind without a policy of
// its own).
func (p RetryPolicy) isZero() bool { return p.Next == nil && p.backoff() == (mq.Backoff{}) }

// retryDelay is the wait before m's next attempt: its kind's policy when
// the worker that claimed it has one, else the client's.
func (c *Client) retryDelay(m *Message) time.Duration {
	if m.retry != nil {
		return max(m.retry(m), 0)
	}
	return c.opts.Retry.Delay(m)
}

// forKind is a kind's policy as its worker keeps it: nil for the zero
// value (the client's applies).
func (p RetryPolicy) forKind() func(*Message) time.Duration {
	if p.isZero() {
		return nil
	}
	return p.Delay
}

// checkAliases checks the aliases of kind.
func checkAliases(kind string, aliases []string) error {
	for _, a := range aliases {
		if err := ValidateKind(a); err != nil {
			return fmt.Errorf("kind %q: alias: %w", kind, err)
		}
	}
	return nil
}

// aliases are the other names of kind's worker, which a worker of kind
// claims too (none without workers or a kind).
func (ws *Workers) aliases(kind string) []string {
	if ws == nil || kind == "" {
		return nil
	}
	return ws.kinds.Aliases(kind)
}

// retry is the retry policy of kind's worker (nil: none of its own).
func (ws *Workers) retry(kind string) func(*Message) time.Duration {
	if ws == nil {
		return nil
	}
	return ws.kinds.Retry(kind)
}

// Knows says whether kind has a worker in the set, as its name or one of
// its aliases (false for a nil set).
func (ws *Workers) Knows(kind string) bool { return ws != nil && ws.kinds.Known(kind) }

// JobDefaults are the enqueue defaults of a kind (JobArgsWithDefaults):
// River's InsertOpts per kind.
type JobDefaults struct {
	// Queue is the queue of EnqueueJob and EnqueueJobTx called with the
	// queue "".
	Queue string
	// EnqueueOptions: every field that the call's options leave at its
	// zero value takes the value here (Kind is always the arguments').
	EnqueueOptions
}

// JobArgsWithDefaults are JobArgs whose kind has enqueue defaults: the
// queue, priority, attempt limit, unique key and its options, timeout,
// and any other EnqueueOptions field. JobMessage, EnqueueJob and
// EnqueueJobTx apply them field by field under the call's own options,
// so that an explicit option overrides the kind's default (a zero value
// cannot: an explicit Priority 0 under a default of 5 is 5).
type JobArgsWithDefaults interface {
	JobArgs
	JobDefaults() JobDefaults
}

// withDefaults is o with every zero field set from the defaults of args'
// kind, and the queue ("" for the kind's).
func withDefaults(args JobArgs, queue string, o EnqueueOptions) (string, EnqueueOptions) {
	a, ok := args.(JobArgsWithDefaults)
	if !ok {
		return queue, o
	}
	d := a.JobDefaults()
	if queue == "" {
		queue = d.Queue
	}
	dst, src := reflect.ValueOf(&o).Elem(), reflect.ValueOf(d.EnqueueOptions)
	for i := range dst.NumField() {
		if f := dst.Field(i); f.IsZero() && f.CanSet() {
			f.Set(src.Field(i))
		}
	}
	return queue, o
}

// checkKinds refuses messages of a kind that Options.Workers does not
// know (as a kind or an alias), unless they allow it
// (EnqueueOptions.AllowUnknownKind). Without Options.Workers baton cannot
// know this program's kinds: every kind passes.
func (c *Client) checkKinds(msgs []NewMessage) error {
	ws := c.opts.Workers
	if ws == nil {
		return nil
	}
	for _, m := range msgs {
		if m.Kind != "" && !m.AllowUnknownKind && !ws.Knows(m.Kind) {
			return fmt.Errorf("%w: %w: kind %q has no worker in Options.Workers (kinds: %v); set EnqueueOptions.AllowUnknownKind to enqueue it for another program",
				ErrInvalid, ErrUnknownKind, m.Kind, ws.Kinds())
		}
	}
	return nil
}

// checkScheduleKind refuses a schedule whose messages' kind
// Options.Workers does not know (see checkKinds).
func (c *Client) checkScheduleKind(s Schedule) error {
	o := s.Options
	if s.Args != nil {
		_, o = withDefaults(s.Args, "", o)
		o.Kind = s.Args.Kind()
	}
	return c.checkKinds([]NewMessage{{EnqueueOptions: o}})
}
