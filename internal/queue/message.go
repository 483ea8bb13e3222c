package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
var States = []string{StatePending, StateScheduled, StateReady, StateRunning, StateRetrying, StateCompleted, StateCancelled, StateDead}

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
	RunAt        time.Time
	Priority     int
	Key          string
	MaxAttempts  int
	UniqueKey    string
	UniquePeriod time.Duration
	UniqueStates []S
	Kind         string
	Timeout      time.Duration
	// AllowUnknownKind is the root's business (Options.Workers).
	AllowUnknownKind bool
	After            []int64
	AfterAnyOutcome  bool
	Metadata         json.RawMessage
	Tags             []string
	UniqueByArgs     bool
}

// Check validates the options of one message.
func (o Options[S]) Check() error {
	if err := o.checkLimits(); err != nil {
		return err
	}
	if err := o.checkUnique(); err != nil {
		return err
	}
	uniqueKey := o.UniqueKey
	if o.UniqueByArgs {
		uniqueKey = "(by arguments)"
	}
	if err := CheckAfter(o.After, o.AfterAnyOutcome, uniqueKey); err != nil {
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
	case o.Delay != 0 && !o.RunAt.IsZero():
		return fmt.Errorf("%w: both a delay (%v) and a run-at time (%s): give one", errs.ErrInvalid, o.Delay, o.RunAt.Format(time.RFC3339Nano))
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
	if !o.RunAt.IsZero() {
		// A delay from this process's clock, which the statement adds to
		// the database's: due when this clock reads RunAt, whatever the
		// skew between the two. In the past: due now.
		o.Delay = max(time.Until(o.RunAt), 0)
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
	// Batch: the outcomes of the parents of a message that ran once they
	// finished whatever became of them (deps.go).
	Batch     *BatchOutcome   `json:"batch,omitempty"`
	TimeoutMS int64           `json:"timeout_ms,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Tags      []string        `json:"tags,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// EncodeMeta writes a message's metadata ("" when there is none).
func EncodeMeta(m Meta) string {
	if m.Context == (tracing.Context{}) && m.TimeoutMS == 0 && m.Metadata == nil && m.Tags == nil && m.Output == nil && m.Batch == nil {
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
