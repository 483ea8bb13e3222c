package baton

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/worker"
)

// JobArgs are the typed arguments of a kind of message, stored as its JSON
// payload. Kind names the kind (1 to 64 letters, digits, '_', '.', ':' or
// '-'); it must not depend on the value (it is called on the zero value).
type JobArgs interface {
	Kind() string
}

// Job is a claimed message with its arguments decoded.
type Job[T JobArgs] struct {
	*Message
	Args T
}

// KindOptions configure the worker of one kind.
type KindOptions struct {
	// Timeout bounds each run of the kind's handler: it overrides
	// WorkerOptions.Timeout, and a message's own EnqueueOptions.Timeout
	// overrides it. 0: none.
	Timeout time.Duration
	// Retry is the kind's retry policy: the wait after a failed attempt
	// of its messages, whichever worker of WorkJobs ran them (the zero
	// value: the client's, Options.Retry). The attempt limit is the
	// message's own, set at enqueue (a kind's default: JobDefaults).
	Retry RetryPolicy
	// Aliases are other kind names whose messages this worker runs, as
	// its own: a kind renamed keeps the old name here until no message
	// of it waits (WorkJobs claims them too, WorkerOptions.Kind
	// included; the handler sees the message's stored Message.Kind).
	// Each is a valid kind name that no other worker of the set has.
	Aliases []string
}

// Workers holds one worker per kind; Client.WorkJobs runs them on a
// queue. It is safe for concurrent use.
type Workers struct {
	kinds worker.Kinds[*Message]
}

// NewWorkers returns an empty set of workers.
func NewWorkers() *Workers { return &Workers{} }

// AddWorker registers handle as the worker of the kind T names. Arguments
// that do not decode fail the attempt with the decode error. It is an
// error to give a kind two workers, an invalid kind name or a negative
// timeout, or an alias that is invalid or taken.
func AddWorker[T JobArgs](ws *Workers, handle func(ctx context.Context, job *Job[T]) error, opts ...KindOptions) error {
	var zero T
	kind := zero.Kind()
	if err := ValidateKind(kind); err != nil {
		return err
	}
	if handle == nil {
		return fmt.Errorf("%w: nil worker for kind %q", ErrInvalid, kind)
	}
	var o KindOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Timeout < 0 {
		return fmt.Errorf("%w: kind %q: negative timeout %v", ErrInvalid, kind, o.Timeout)
	}
	if err := checkAliases(kind, o.Aliases); err != nil {
		return err
	}
	taken := ws.kinds.Add(kind, worker.Kind[*Message]{Timeout: o.Timeout, Retry: o.Retry.forKind(), Aliases: o.Aliases,
		Handle: func(ctx context.Context, m *Message) error {
			var args T
			if err := json.Unmarshal(m.Payload, &args); err != nil {
				return fmt.Errorf("kind %q: the arguments do not decode: %w", kind, err)
			}
			return handle(ctx, &Job[T]{Message: m, Args: args})
		}})
	switch {
	case taken == kind:
		return fmt.Errorf("%w: kind %q has a worker already", ErrInvalid, kind)
	case taken != "":
		return fmt.Errorf("%w: kind %q: alias %q is a kind or an alias of the workers already", ErrInvalid, kind, taken)
	}
	return nil
}

// Kinds lists the kinds that have a worker, sorted (their aliases not
// included).
func (ws *Workers) Kinds() []string { return ws.kinds.Names() }

// dispatch runs the worker of the message's kind.
func (ws *Workers) dispatch(ctx context.Context, m *Message) error {
	if h, ok := ws.kinds.Handler(m.Kind); ok {
		return h(ctx, m)
	}
	if m.Kind == "" {
		return fmt.Errorf("%w: message %d has no kind", ErrUnknownKind, m.ID)
	}
	return fmt.Errorf("%w: kind %q (workers: %v)", ErrUnknownKind, m.Kind, ws.Kinds())
}

// WorkJobs runs the workers on the queue's messages, each message by the
// worker of its kind, as Work does with one handler (opts.Kind, when set,
// claims only that kind and its aliases). A message whose kind has no
// worker (as its kind or an alias) fails its attempt with ErrUnknownKind,
// naming it.
func (c *Client) WorkJobs(ctx context.Context, queue string, ws *Workers, opts WorkerOptions) error {
	if ws == nil {
		return fmt.Errorf("%w: nil workers", ErrInvalid)
	}
	opts.kinds = ws
	return c.Work(ctx, queue, ws.dispatch, opts)
}

// JobMessage is the message that carries args: its payload their JSON,
// its kind theirs, its options opts over the kind's defaults
// (JobArgsWithDefaults; for EnqueueMany and EnqueueManyTx, whose queue is
// the call's). With opts.UniqueByArgs its unique key is derived from
// args: from the fields of args' struct tagged `baton:"unique"` when it
// has some, from all of its JSON otherwise (see EnqueueOptions.UniqueByArgs).
func JobMessage(args JobArgs, opts ...EnqueueOptions) (NewMessage, error) {
	if args == nil {
		return NewMessage{}, fmt.Errorf("%w: nil job arguments", ErrInvalid)
	}
	var o EnqueueOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	_, o = withDefaults(args, "", o)
	o.Kind = args.Kind()
	if err := ValidateKind(o.Kind); err != nil {
		return NewMessage{}, err
	}
	payload, err := json.Marshal(args)
	if err != nil {
		return NewMessage{}, fmt.Errorf("%w: kind %q: the arguments do not encode: %v", ErrInvalid, o.Kind, err)
	}
	if err := uniqueByArgs(&o, args, payload); err != nil {
		return NewMessage{}, err
	}
	return NewMessage{Payload: payload, EnqueueOptions: o}, nil
}

// EnqueueJob enqueues a message of args' kind with args as its JSON
// payload, and returns its id. The kind's defaults (JobArgsWithDefaults)
// fill in what opts and queue leave zero ("": the kind's queue). With
// opts.UniqueKey, a duplicate returns the id of the message holding the
// key with ErrDuplicate (see Enqueue). A kind that Options.Workers does
// not know is refused (ErrUnknownKind) unless
// EnqueueOptions.AllowUnknownKind.
func (c *Client) EnqueueJob(ctx context.Context, queue string, args JobArgs, opts ...EnqueueOptions) (int64, error) {
	m, err := JobMessage(args, opts...)
	if err != nil {
		return 0, err
	}
	return c.Enqueue(ctx, jobQueue(args, queue), m.Payload, m.EnqueueOptions)
}

// EnqueueJobTx is EnqueueJob inside the caller's transaction (see
// EnqueueTx for what tx may be).
func (c *Client) EnqueueJobTx(ctx context.Context, tx Execer, queue string, args JobArgs, opts ...EnqueueOptions) (int64, error) {
	m, err := JobMessage(args, opts...)
	if err != nil {
		return 0, err
	}
	return c.EnqueueTx(ctx, tx, jobQueue(args, queue), m.Payload, m.EnqueueOptions)
}

// jobQueue is queue, or the default queue of args' kind when it is "".
func jobQueue(args JobArgs, queue string) string {
	q, _ := withDefaults(args, queue, EnqueueOptions{})
	return q
}
