package baton

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	mq "github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/tracing"
	"github.com/batonhq/baton/internal/worker"
)

// Handler processes one message. Returning nil acknowledges it; an error
// retries it (backoff, then the dead letters at the attempt limit), unless
// it wraps ErrPermanent, which sends it to the dead letters at once. A
// panic is recovered and retried, with the panic and its stack recorded as
// the message's error.
type Handler func(ctx context.Context, m *Message) error

// WorkerOptions configure Work.
type WorkerOptions struct {
	// Concurrency is how many messages are handled at once (default 1;
	// always 1 in Ordered mode).
	Concurrency int
	// Mode is how the queue hands out messages.
	Mode QueueMode
	// Visibility is each claim's lease (default 30s); it is extended
	// while the handler runs.
	Visibility time.Duration
	// Grace is how long a shutdown waits for running handlers before
	// cancelling their contexts (default 10s).
	Grace time.Duration
	// Prefetch is ignored: a worker claims only as many messages as it
	// has idle handlers, so that every claim starts a run at once (in
	// Ordered mode an in-order batch, whose messages behind the running
	// one count no attempt until each starts). A claim counts an attempt,
	// and a killed worker's claims are runs that started (messages
	// claimed ahead of busy handlers were charged an attempt they never
	// ran, and waited behind them while other workers were idle).
	//
	// Deprecated: claims are never made ahead of the handlers.
	Prefetch int
	// Drain makes Work return once no message is ready and none is in
	// flight (the cron pattern) instead of waiting for more; the
	// dependants of what it completed (EnqueueOptions.After) are run
	// before it returns.
	Drain bool
	// Timeout bounds each handler run (its context is cancelled after it;
	// the attempt then fails and is retried); a message's own
	// EnqueueOptions.Timeout overrides it. 0: none.
	Timeout time.Duration
	// Name is the worker session's owner name (default "worker QUEUE").
	Name string
	// Kind handles only messages of this kind ("" for any); Parallel mode
	// only. Other kinds stay in the queue for other workers.
	Kind string
	// OnError is called after every failed attempt (an error, a panic with
	// its stack, a timeout, a cancellation), with the record kept on the
	// message, before the message is retried or finished. It runs on the
	// handler's goroutine: keep it quick. A panic in it is logged.
	OnError func(m *Message, e AttemptError)
	// Middleware wraps the handler, the first element outermost: for
	// logging, metrics, tracing or recovering in the program's own way.
	Middleware []func(Handler) Handler

	kinds *Workers // WorkJobs: the per-kind timeouts
}

// Work runs handler on the queue's messages until ctx ends (or, with
// Drain, until the queue has nothing ready), then shuts down gracefully:
// it stops claiming, lets running handlers finish within the grace period,
// cancels the rest and ends its session, which gives their messages back to
// the queue. It returns nil after a graceful stop.
//
// A worker survives the loss of its session (the database was unreachable
// for longer than the lease, or restarted): it stops claiming at once,
// cancels the contexts of running handlers (their messages will be
// delivered again), waits until the database answers, and carries on with
// a new session.
func (c *Client) Work(ctx context.Context, queue string, handler Handler, opts WorkerOptions) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	if handler == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalid)
	}
	if err := opts.fill(queue); err != nil {
		return err
	}
	return worker.Work(ctx, worker.Config[*Message]{
		Queue: queue, Concurrency: opts.Concurrency, Ordered: opts.Mode == Ordered, Visibility: opts.Visibility,
		Grace: opts.Grace, Drain: opts.Drain, PollInterval: c.opts.PollInterval, Lease: c.opts.Lease,
		Released: c.mq.Releases(),
		Logger:   c.opts.Logger, Registry: c.workers, Listen: c.bus.Listening, Notifying: c.notifyUsers,
		Open: func(ctx context.Context) (worker.Session[*Message], error) {
			s, err := c.NewSession(ctx, SessionOptions{Name: opts.Name})
			if err != nil {
				return nil, err
			}
			return &workSession{Session: s, queue: queue, h: worker.Chain(handler, opts.Middleware), o: &opts}, nil
		},
	})
}

// fill checks the options and sets the defaults.
func (o *WorkerOptions) fill(queue string) error {
	if err := o.check(); err != nil {
		return err
	}
	if o.Concurrency <= 0 || o.Mode == Ordered {
		o.Concurrency = 1
	}
	if o.Visibility <= 0 {
		o.Visibility = 30 * time.Second
	}
	if o.Grace <= 0 {
		o.Grace = 10 * time.Second
	}
	if o.Name == "" {
		o.Name = "worker " + queue
	}
	return nil
}

// check validates the handler timeout, mode and kind.
func (o *WorkerOptions) check() error {
	if o.Timeout < 0 {
		return fmt.Errorf("%w: negative handler timeout %v", ErrInvalid, o.Timeout)
	}
	return (ClaimOptions{Mode: o.Mode, Kind: o.Kind}).check()
}

// workSession is a worker's session as internal/worker sees it: the
// session's claims of the worker's queue and their settlement (Extend,
// Retry and the session's life are the Session's own), what the runtime
// reads of a message, and the program's handler and hooks.
type workSession struct {
	*Session
	queue string
	h     Handler // with the middleware
	o     *WorkerOptions
}

// Take claims up to max messages for idle handlers, stamping each with
// when the claim began (a claim that began after a pause was known saw
// the queue resumed).
func (w *workSession) Take(ctx context.Context, max int, wait bool) ([]*Message, error) {
	d := Forever
	if !wait {
		d = 0
	}
	began := time.Now()
	msgs, err := w.Claim(ctx, w.queue, ClaimOptions{Max: max, Wait: d, Mode: w.o.Mode, Visibility: w.o.Visibility,
		Kind: w.o.Kind, inOrderBatch: true, aliases: w.o.kinds.aliases(w.o.Kind)})
	for _, m := range msgs {
		m.claimBegan = began
		m.retry = w.o.kinds.retry(m.Kind)
	}
	return msgs, err
}

func (w *workSession) Start(ctx context.Context, m *Message, d time.Duration) error {
	return w.start(ctx, m, d)
}

func (w *workSession) GiveBack(ctx context.Context, m *Message) error { return w.giveBack(ctx, m) }

func (w *workSession) Cancel(ctx context.Context, m *Message, cause error) error {
	return w.cancelled(ctx, m, cause)
}

func (w *workSession) Dead(ctx context.Context, m *Message, cause error) error {
	return w.finishDead(ctx, m, cause)
}

func (w *workSession) Complete(ctx context.Context, ms []*Message) (int, error) {
	claims := make([]driver.Claim, 0, len(ms))
	n := 0
	for _, m := range ms {
		if m.output != nil {
			// Its output goes with it: a statement of its own.
			k, err := w.c.mq.CompleteOutput(ctx, w.claim(m), m.output)
			if err != nil {
				return n, err
			}
			n += k
			continue
		}
		claims = append(claims, w.claim(m))
	}
	k := 0
	var err error
	if len(claims) > 0 {
		k, err = w.c.mq.Complete(ctx, w.id, claims)
	}
	if err == nil {
		w.c.jobsCompleted(ms, n+k)
	}
	return n + k, err
}

func (w *workSession) Completed(n int) {
	w.c.mq.CountFinished(w.queue, int64(n), 0)
	w.c.mq.Settled(w.queue) // a limited queue's consumers may claim now
	if w.o.Mode != Parallel {
		// The next message of the queue or of a key may go now.
		w.c.queueWaits.Wake(w.queue)
	}
}

func (w *workSession) MessageID(m *Message) int64      { return m.ID }
func (w *workSession) Held(m *Message) bool            { return m.held }
func (w *workSession) ClaimedAt(m *Message) time.Time  { return m.claimedAt }
func (w *workSession) ClaimBegan(m *Message) time.Time { return m.claimBegan }

// Timeout is the bound of a handler run of the message: its own, else its
// kind's, else the worker's.
func (w *workSession) Timeout(m *Message) time.Duration {
	if ms := m.meta.TimeoutMS; ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	if w.o.kinds != nil {
		if d := w.o.kinds.kinds.Timeout(m.Kind); d > 0 {
			return d
		}
	}
	return w.o.Timeout
}

func (w *workSession) Begin(ctx context.Context, m *Message) (context.Context, trace.Span) {
	return w.c.spans.StartProcess(ctx, m.meta.Context, m.Queue, m.ID, m.Attempt)
}

// Handle runs the handler, recovering a panic as an error with its stack.
func (w *workSession) Handle(ctx context.Context, m *Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &mq.PanicError{Value: p, Stack: string(debug.Stack())}
		}
	}()
	return w.h(ctx, m)
}

// End ends a run's span, tells the Observer and calls the error hook of a
// failed attempt.
func (w *workSession) End(span trace.Span, m *Message, err error, began time.Time) {
	tracing.End(span, err)
	lost := w.Err() != nil && !errors.Is(w.Err(), ErrClosed)
	took := time.Since(began)
	w.c.opts.Observer.HandlerDone(w.queue, m.Kind, outcome(m, err, lost), took)
	w.c.mq.CountDuration(w.queue, took)
	if err != nil && !worker.IsSnooze(err) {
		w.onError(m, err)
	}
}

// onError calls the error hook of a failed attempt.
func (w *workSession) onError(m *Message, err error) {
	if w.o.OnError == nil {
		return
	}
	e := AttemptError(attemptError(m, err))
	worker.Hook(w.c.opts.Logger, "baton: the worker's OnError hook panicked", func() { w.o.OnError(m, e) },
		"queue", w.queue, "message", m.ID)
}

// newRegistry makes the client's state of its workers: the handlers of
// running messages and the queues it knows paused.
func newRegistry(c *Client) *worker.Registry {
	return worker.NewRegistry(worker.RegistryConfig{
		Lease: c.opts.Lease, Logger: c.opts.Logger, Tasks: &c.wg,
		CancelRequested: c.mq.CancelRequested, QueuePaused: c.mq.Paused,
		Announce: func(id int64) {
			c.announce(bus.Cancel, strconv.FormatInt(id, 10), "baton: announcing a cancellation", "message", id)
		},
	})
}
