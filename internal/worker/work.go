// Package worker is the worker runtime behind Client.Work: it claims a
// queue's messages only for idle handlers, runs each on a handler slot of
// its own goroutine, keeps its claim alive while it runs, settles the
// outcomes (acknowledgements in batches), and carries on with a new
// session after a loss. The root package gives it a Session of messages
// of its own type M; the Registry is the process's state of its running
// handlers and paused queues.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/errs"
)

// Session is a worker's session, as the root package makes it: its life,
// its claims of messages of type M and their settlement, what the runtime
// reads of a message, and the program's side of a run. The runtime calls
// it from several goroutines at once.
type Session[M any] interface {
	// Done is closed when the session ends; Err then says why
	// (errs.ErrSessionLost when its lease could not be kept). Close ends
	// it, giving its claims back.
	Done() <-chan struct{}
	Err() error
	Close(ctx context.Context) error

	// Take claims up to max messages of the worker's queue (Ordered: an
	// in-order batch, whose messages behind the first are held), waiting
	// for one when wait is set; errs.ErrEmpty when there is none.
	Take(ctx context.Context, max int, wait bool) ([]M, error)
	// Start starts a held message with a fresh lease of d; Extend renews
	// a claim's lease for d. Both: errs.ErrNotClaimed when the claim is
	// no longer the session's or was cancelled.
	Start(ctx context.Context, m M, d time.Duration) error
	Extend(ctx context.Context, m M, d time.Duration) error
	// GiveBack returns a message never handled to its queue, keeping its
	// place; Cancel, Dead and Retry settle a failed run as cancelled,
	// failed for good, or retried after the backoff; Snooze puts a run
	// off for d, its attempt taken back (errs.ErrCancelled when the
	// message was cancelled meanwhile and ended so).
	GiveBack(ctx context.Context, m M) error
	Snooze(ctx context.Context, m M, d time.Duration) error
	Cancel(ctx context.Context, m M, cause error) error
	Dead(ctx context.Context, m M, cause error) error
	Retry(ctx context.Context, m M, cause error) error
	// Complete acknowledges messages in one statement and returns how
	// many it completed; Completed counts n acknowledged messages and
	// lets the next message of the queue or of a key go.
	Complete(ctx context.Context, ms []M) (int, error)
	Completed(n int)

	// MessageID, Held (claimed behind the head of an in-order batch and
	// not started), ClaimedAt (when the claim was made or last renewed),
	// ClaimBegan (when the claim that brought it began) and Timeout (the
	// bound of a run, 0 for none) are what the runtime reads of m.
	MessageID(m M) int64
	Held(m M) bool
	ClaimedAt(m M) time.Time
	ClaimBegan(m M) time.Time
	Timeout(m M) time.Duration

	// Begin starts the span of a run; Handle runs the handler, a panic
	// recovered as an error that keeps its stack; End ends the span and
	// reports the run that began at began (observer, error hook).
	Begin(ctx context.Context, m M) (context.Context, trace.Span)
	Handle(ctx context.Context, m M) error
	End(span trace.Span, m M, err error, began time.Time)
}

// Users counts the users of notifications: the listener runs while any.
type Users interface {
	In()
	Out()
}

// Config configures a worker.
type Config[M any] struct {
	Queue string
	// Concurrency is the number of handler slots (1 when Ordered).
	Concurrency int
	// Ordered claims in-order batches, sized by the handler's pace.
	Ordered bool
	// Visibility is each claim's lease, renewed while its handler runs.
	Visibility time.Duration
	// Grace is how long a shutdown waits for running handlers before
	// cancelling their contexts.
	Grace time.Duration
	// Drain ends the worker once nothing is ready and nothing is open,
	// unless Released (where set) says that messages of the queue were
	// just made ready (dependants of what it completed).
	Drain    bool
	Released func(ctx context.Context) bool
	// PollInterval is the pause after a failed claim, and the first
	// delay between attempts to open a session after a loss; Lease
	// bounds those delays, each settlement and the session's close.
	PollInterval time.Duration
	Lease        time.Duration
	Logger       *slog.Logger
	Registry     *Registry
	// Open opens a session for the worker (again after a loss).
	Open func(ctx context.Context) (Session[M], error)
	// Listen starts the process's listener, which brings cancellations.
	Listen    func(ctx context.Context) error
	Notifying Users
}

// Work runs a worker until ctx ends (or, with Drain, until the queue has
// nothing ready), then shuts down gracefully: it stops claiming, lets
// running handlers finish within the grace period, cancels the rest and
// ends its session. A lost session stops claiming and cancels the running
// handlers at once; Work then waits for the database and carries on with
// a new session.
func Work[M any](ctx context.Context, cfg Config[M]) error {
	s, err := cfg.Open(ctx)
	if err != nil {
		return unlessStopped(ctx, err) // stopped before it began: a graceful stop too
	}
	for {
		err := workWith(ctx, &cfg, s)
		if !errors.Is(err, errs.ErrSessionLost) || ctx.Err() != nil {
			return err
		}
		cfg.Logger.Warn("baton: " + fmt.Sprintf("worker on queue %q: %v; carrying on with a new session", cfg.Queue, err))
		if s, err = renewSession(ctx, &cfg); err != nil {
			return unlessStopped(ctx, err)
		}
	}
}

// unlessStopped is err, nil once ctx ended: the worker stopped.
func unlessStopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// renewSession opens a new session after a loss, waiting for the database
// to answer, until ctx ends or the client is closed.
func renewSession[M any](ctx context.Context, cfg *Config[M]) (Session[M], error) {
	delay := cfg.PollInterval
	for {
		s, err := cfg.Open(ctx)
		if err == nil || errors.Is(err, errs.ErrClosed) || ctx.Err() != nil {
			return s, err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		delay = min(2*delay, cfg.Lease)
	}
}

// stopOnLoss calls the stops once the session is lost (lost is closed),
// unless done is closed first.
func stopOnLoss(lost, done <-chan struct{}, stops ...context.CancelFunc) {
	select {
	case <-lost:
		for _, stop := range stops {
			stop()
		}
	case <-done:
	}
}

// workWith runs the worker with one session until ctx ends, the drain is
// done, or the session is lost (then it returns the loss).
func workWith[M any](ctx context.Context, cfg *Config[M], s Session[M]) error {
	w := &worker[M]{cfg: cfg, s: s, reg: cfg.Registry}
	// Cancellations of running messages arrive as notifications (when the
	// listener cannot start, the lease extensions are the fallback).
	if err := cfg.Listen(ctx); err != nil && ctx.Err() == nil {
		cfg.Logger.Warn("baton: worker cannot listen for cancellations; it learns of them at lease renewals", "queue", cfg.Queue, "error", err)
	}
	cfg.Notifying.In()
	defer cfg.Notifying.Out()
	// Handler contexts outlive ctx by the grace period.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	stopGrace := make(chan struct{})
	go graceThenCancel(ctx, stopGrace, cfg.Grace, hcancel)
	// A lost session stops claiming and handling at once: whatever it
	// claimed may already be another worker's.
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	go stopOnLoss(s.Done(), lctx.Done(), lcancel, hcancel)
	runErr := w.loop(lctx, hctx)
	close(stopGrace)
	if err := s.Err(); errors.Is(err, errs.ErrSessionLost) {
		return err
	}
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Lease)
	defer cancel()
	if err := s.Close(closeCtx); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// graceThenCancel is graceful shutdown: once ctx ends, handlers get the
// grace period, then their contexts are cancelled (cancel), unless stop
// is closed first (the worker ended).
func graceThenCancel(ctx context.Context, stop <-chan struct{}, grace time.Duration, cancel func()) {
	select {
	case <-ctx.Done():
	case <-stop:
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-t.C:
		cancel()
	case <-stop:
	}
}

// Chain wraps handler in the middleware, the first element outermost.
func Chain[H any](handler H, middleware []func(H) H) H {
	for i := len(middleware) - 1; i >= 0; i-- {
		handler = middleware[i](handler)
	}
	return handler
}

// Hook calls a program's hook, logging a panic in it as msg, with attrs.
func Hook(log *slog.Logger, msg string, hook func(), attrs ...any) {
	defer func() {
		if p := recover(); p != nil {
			log.Error(msg, append(attrs, "panic", p)...)
		}
	}()
	hook()
}
