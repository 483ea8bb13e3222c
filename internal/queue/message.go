package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/tracing"
)

// MaxPayload is the largest message payload, in bytes
// (baton.MaxMessagePayload).
const MaxPayload = 1 << 20

// DefaultMaxAttempts is a message's attempt limit when none is given.
const DefaultMaxAttempts = 25

// States lists every state name, in the order of a message's life.
var States = []string{StateScheduled, StateReady, StateRunning, StateRetrying, StateCompleted, StateCancelled, StateDead}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`) })

// ValidateName checks a queue or kind name (what says which): 1 to 64
// letters, digits, '_', '.', ':' or '-'.
func ValidateName(what, name string) error {
	if !nameRE().MatchString(name) {
		return fmt.Errorf("%w: %s %s: use 1 to 64 letters, digits, '_', '.', ':' or '-'", errs.ErrInvalid, what, errs.Quote(name))
	}
	return nil
}

// CheckPayload checks a message's payload: 1 byte to MaxPayload.
func CheckPayload(payload []byte) error {
	switch {
	case len(payload) == 0:
		return fmt.Errorf("%w: empty payload", errs.ErrInvalid)
	case len(payload) > MaxPayload:
		return fmt.Errorf("%w: payload is %d bytes, more than %d", errs.ErrInvalid, len(payload), MaxPayload)
	}
	return nil
}

// Options qualify one message to enqueue: baton.EnqueueOptions, whose
// unique states are of type S (the root converts its options to these).
type Options[S ~string] struct {
	Delay        time.Duration
	Priority     int
	Key          string
	MaxAttempts  int
	UniqueKey    string
	UniquePeriod time.Duration
	UniqueStates []S
	Kind         string
	Timeout      time.Duration
	Metadata     json.RawMessage
	Tags         []string
	UniqueByArgs bool
}

// Check validates the options of one message.
func (o Options[S]) Check() error {
	if err := o.checkLimits(); err != nil {
		return err
	}
	if err := o.checkUnique(); err != nil {
		return err
	}
	if o.Kind != "" {
		if err := ValidateName("kind", o.Kind); err != nil {
			return err
		}
	}
	return o.checkData()
}

// checkLimits validates the delay, attempt limit, priority, key and
// timeout.
func (o Options[S]) checkLimits() error {
	switch {
	case o.Delay < 0:
		return fmt.Errorf("%w: negative delay %v", errs.ErrInvalid, o.Delay)
	case o.MaxAttempts < 0:
		return fmt.Errorf("%w: negative attempt limit %d", errs.ErrInvalid, o.MaxAttempts)
	case o.Priority < math.MinInt32 || o.Priority > math.MaxInt32:
		// The column is a 32-bit integer on every backend.
		return fmt.Errorf("%w: priority %d: give a number from %d to %d", errs.ErrInvalid, o.Priority, math.MinInt32, math.MaxInt32)
	case len(o.Key) > 255:
		return fmt.Errorf("%w: key is %d bytes, more than 255", errs.ErrInvalid, len(o.Key))
	case o.Timeout < 0 || (o.Timeout > 0 && o.Timeout < time.Millisecond):
		return fmt.Errorf("%w: timeout %v: give 0 (none) or at least 1ms", errs.ErrInvalid, o.Timeout)
	}
	return nil
}

// checkUnique validates the unique key's options.
func (o Options[S]) checkUnique() error {
	switch {
	case len(o.UniqueKey) > 255:
		return fmt.Errorf("%w: unique key is %d bytes, more than 255", errs.ErrInvalid, len(o.UniqueKey))
	case o.UniquePeriod < 0:
		return fmt.Errorf("%w: negative unique period %v", errs.ErrInvalid, o.UniquePeriod)
	case o.UniqueByArgs && o.UniqueKey != "":
		return fmt.Errorf("%w: give a unique key or unique by arguments, not both", errs.ErrInvalid)
	case o.UniquePeriod > 0 && o.UniqueKey == "" && !o.UniqueByArgs:
		return fmt.Errorf("%w: a unique period needs a unique key", errs.ErrInvalid)
	case len(o.UniqueStates) > 0 && o.UniqueKey == "" && !o.UniqueByArgs:
		return fmt.Errorf("%w: unique states need a unique key", errs.ErrInvalid)
	}
	for _, st := range o.UniqueStates {
		if !slices.Contains(States, string(st)) {
			return fmt.Errorf("%w: unique state %q: give one of %v", errs.ErrInvalid, st, States)
		}
	}
	return nil
}

// NewMessage checks one message to enqueue and converts it to a row.
func NewMessage[S ~string](queue string, payload []byte, o Options[S]) (driver.NewMessage, error) {
	if err := ValidateName("queue", queue); err != nil {
		return driver.NewMessage{}, err
	}
	if err := CheckPayload(payload); err != nil {
		return driver.NewMessage{}, err
	}
	if err := o.Check(); err != nil {
		return driver.NewMessage{}, err
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.UniqueByArgs {
		o.UniqueKey = ArgsKey(o.Kind, payload)
	}
	m := driver.NewMessage{Queue: queue, Payload: payload, Priority: o.Priority, Key: o.Key, HasKey: o.Key != "",
		Delay: o.Delay, MaxAttempts: o.MaxAttempts, UniqueKey: o.UniqueKey, Kind: o.Kind,
		Meta: EncodeMeta(Meta{TimeoutMS: o.Timeout.Milliseconds(), Metadata: o.Metadata, Tags: NormalTags(o.Tags)})}
	if o.UniquePeriod > 0 {
		now := time.Now().UnixMicro()
		p := o.UniquePeriod.Microseconds()
		start := now - now%p
		m.UniqueKey = fmt.Sprintf("%s@%d", o.UniqueKey, start)
		m.UniqueExpires = start + p
	}
	for _, st := range o.UniqueStates {
		m.UniqueStates = append(m.UniqueStates, string(st))
	}
	return m, nil
}

// Meta is what a message carries in its meta column (JSON): the
// enqueuer's trace context (internal/tracing), the message's handler
// timeout, and the user's metadata, tags and recorded output (data.go).
type Meta struct {
	tracing.Context
	TimeoutMS int64           `json:"timeout_ms,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Tags      []string        `json:"tags,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// EncodeMeta writes a message's metadata ("" when there is none).
func EncodeMeta(m Meta) string {
	if m.Context == (tracing.Context{}) && m.TimeoutMS == 0 && m.Metadata == nil && m.Tags == nil && m.Output == nil {
		return ""
	}
	return encodeMeta(m)
}

// encodeMeta is EncodeMeta's JSON: apart, so that only a message with
// metadata has its Meta copied to the heap (json.Marshal's argument
// escapes).
func encodeMeta(m Meta) string {
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(b)
}

// DecodeMeta reads a message's metadata; what cannot be read is ignored.
// A message without metadata costs no allocation.
func DecodeMeta(s string) Meta {
	if s == "" {
		return Meta{}
	}
	var m Meta
	_ = json.Unmarshal([]byte(s), &m)
	return m
}

// WithTrace adds the trace context to a message's metadata.
func WithTrace(meta string, tc tracing.Context) string {
	m := DecodeMeta(meta)
	m.Context = tc
	return EncodeMeta(m)
}

// PanicError is a handler's panic, with the stack where it happened.
type PanicError struct {
	Value any
	Stack string
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// AttemptError records the failure of a message's attempt.
func AttemptError(attempt int, cause error) driver.AttemptError {
	e := driver.AttemptError{At: time.Now().UTC(), Attempt: attempt}
	var p *PanicError
	switch {
	case errors.As(cause, &p):
		e.Error, e.Stack = p.Error(), p.Stack
	case cause != nil:
		e.Error = cause.Error()
	}
	return e
}

// RetryError is the record of a failed attempt, for a retry, and whether
// the message is at its attempt limit: then it is a dead letter instead.
func RetryError(attempt, maxAttempts int, cause error) (e driver.AttemptError, dead bool) {
	e = AttemptError(attempt, cause)
	if attempt >= maxAttempts {
		e.Error = fmt.Sprintf("attempt limit %d reached: %s", maxAttempts, e.Error)
		return e, true
	}
	return e, false
}

// Backoff is the backoff between attempts (baton.RetryPolicy): Base ×
// 2^(attempt-1), at most Max, spread by ±Jitter (a fraction).
type Backoff struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64
}

// Filled is b with the defaults set: 1 s base, 10 min at most, ±20%
// jitter.
func (b Backoff) Filled() Backoff {
	if b.Base <= 0 {
		b.Base = time.Second
	}
	if b.Max <= 0 {
		b.Max = 10 * time.Minute
	}
	if b.Jitter == 0 {
		b.Jitter = 0.2
	}
	return b
}

// Delay is the wait before the attempt after attempt.
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Base
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if b.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + b.Jitter*(2*rand.Float64()-1)))
	}
	return max(d, 0)
}
