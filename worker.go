package baton

import (
	"context"

	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/tracing"
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
	// flight (the cron pattern) instead of waiting for more.
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
	s, err := c.NewSession(ctx, SessionOptions{Name: opts.Name})
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it began: a graceful stop too
		}
		return err
	}
	for {
		err := c.workWith(ctx, s, queue, handler, opts)
		if !errors.Is(err, ErrSessionLost) || ctx.Err() != nil {
			return err
		}
		c.log.Warnf("worker on queue %q: %v; carrying on with a new session", queue, err)
		if s, err = c.renewSession(ctx, opts.Name); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// fill checks the options and sets the defaults.
func (o *WorkerOptions) fill(queue string) error {
	if o.Timeout < 0 {
		return fmt.Errorf("%w: negative handler timeout %v", ErrInvalid, o.Timeout)
	}
	if err := (ClaimOptions{Mode: o.Mode, Kind: o.Kind}).check(); err != nil {
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

// renewSession opens a new session after a loss, waiting for the database
// to answer, until ctx ends or the client is closed.
func (c *Client) renewSession(ctx context.Context, name string) (*Session, error) {
	delay := c.opts.PollInterval
	for {
		s, err := c.NewSession(ctx, SessionOptions{Name: name})
		if err == nil || errors.Is(err, ErrClosed) || ctx.Err() != nil {
			return s, err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		delay = min(2*delay, c.opts.Lease)
	}
}

// workWith runs the worker with one session until ctx ends, the drain is
// done, or the session is lost (then it returns the loss).
func (c *Client) workWith(ctx context.Context, s *Session, queue string, handler Handler, opts WorkerOptions) error {
	h := handler
	for i := len(opts.Middleware) - 1; i >= 0; i-- {
		h = opts.Middleware[i](h)
	}
	w := &worker{c: c, s: s, queue: queue, h: h, o: opts}
	// Cancellations of running messages arrive as notifications (when the
	// listener cannot start, the lease extensions are the fallback).
	if err := c.listening(ctx); err != nil && ctx.Err() == nil {
		c.opts.Logger.Warn("baton: worker cannot listen for cancellations; it learns of them at lease renewals", "queue", queue, "error", err)
	}
	c.notifyUsers.In()
	defer c.notifyUsers.Out()
	// Handler contexts outlive ctx by the grace period.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	stopGrace := make(chan struct{})
	go graceThenCancel(ctx, stopGrace, opts.Grace, hcancel)
	// A lost session stops claiming and handling at once: whatever it
	// claimed may already be another worker's.
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	go func() {
		select {
		case <-s.Done():
			lcancel()
			hcancel()
		case <-lctx.Done():
		}
	}()
	runErr := w.loop(lctx, hctx)
	close(stopGrace)
	if err := s.Err(); errors.Is(err, ErrSessionLost) {
		return err
	}
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Lease)
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

type worker struct {
	c     *Client
	s     *Session
	queue string
	h     Handler
	o     WorkerOptions
	wg    sync.WaitGroup

	jobs    chan *Message // claimed, handed to an idle handler
	results chan result   // finished, not yet acknowledged
	mu      sync.Mutex
	open    int           // claimed and not yet settled (acked, retried, failed)
	busy    int           // claimed and not yet finished by its handler
	broken  atomic.Bool   // Ordered: a message of the current batch failed
	settled chan struct{} // signalled when open decreases
	freed   chan struct{} // signalled when busy decreases
	// runTime: how long the handler's runs take lately (Ordered: sizes
	// the in-order batches).
	runTime atomic.Int64
}

type result struct {
	m         *Message
	err       error
	unstarted bool // shut down before it started: give it back as it was
	lost      bool // its claim ran out before it started: nothing to do
}

// resultsBuffer is how many finished messages may wait for the completer
// beyond one per handler: a handler whose result does not fit waits, and
// holds its slot, while the database is slow to settle them.
const resultsBuffer = 256

// maxInOrderBatch bounds an Ordered worker's in-order batch.
const maxInOrderBatch = 256

// claimMax is how many messages a claim may take with free idle handlers.
// In Ordered mode (one handler) it is an in-order batch: only one worker
// can hold an ordered queue anyway, and a batch saves a claim (and the
// wait for the last acknowledgement) per message. Its messages behind the
// head are held: each counts as a run only once the handler starts it,
// and a worker killed meanwhile leaves them untouched. The batch is what
// the handler runs in a third of the visibility at its recent pace, so
// that held claims rarely outlive their leases (which are not renewed: a
// lapsed one goes back to the queue untouched and is claimed again).
func (w *worker) claimMax(free int) int {
	if w.o.Mode != Ordered {
		return free
	}
	per := time.Duration(w.runTime.Load())
	if per <= 0 {
		return maxInOrderBatch
	}
	return int(min(max(int64(w.o.Visibility/3/per), 1), maxInOrderBatch))
}

// ran records how long a run took: the recent pace decays by half per run
// towards faster runs, and follows slower ones at once.
func (w *worker) ran(d time.Duration) {
	w.runTime.Store(max(int64(d), w.runTime.Load()/2))
}

func (w *worker) loop(ctx, hctx context.Context) error {
	// A claim never takes more than the idle handlers (or, Ordered, an
	// in-order batch): each claimed message is received by one at once.
	w.jobs = make(chan *Message, w.claimMax(w.o.Concurrency))
	w.results = make(chan result, w.o.Concurrency+resultsBuffer)
	w.settled = make(chan struct{}, 1)
	w.freed = make(chan struct{}, 1)
	for i := 0; i < w.o.Concurrency; i++ {
		w.wg.Add(1)
		go w.handler(ctx, hctx)
	}
	completed := make(chan struct{})
	go func() { defer close(completed); w.completer() }()
	err := w.fetch(ctx)
	close(w.jobs) // handlers finish what was claimed, then stop
	go func() { w.wg.Wait(); close(w.results) }()
	<-completed
	return err
}

func (w *worker) counts() (open, busy int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.open, w.busy
}

func (w *worker) openCount() int {
	open, _ := w.counts()
	return open
}

// fetch claims messages whenever a handler is idle, as many as there are
// idle handlers (claimMax), until ctx ends or, with Drain, until nothing
// is ready and nothing is open. Nothing is claimed ahead of the handlers:
// a claim counts an attempt, which only a run that starts may use (a
// killed worker's claims were all running), and a message waiting behind
// a busy handler would wait while other workers are idle.
func (w *worker) fetch(ctx context.Context) error {
	w.pausedNotice(ctx)
	for ctx.Err() == nil {
		openBefore, busy := w.counts()
		free := w.o.Concurrency - busy
		if free <= 0 {
			if err := w.awaitRoom(ctx); err != nil {
				return err
			}
			continue
		}
		wait := Forever
		if w.o.Drain {
			// A drain ends once nothing is ready: don't block. Claims are
			// retried when something settles (or after a poll interval).
			wait = 0
		}
		began := time.Now()
		msgs, err := w.s.Claim(ctx, w.queue, ClaimOptions{Max: w.claimMax(free), Wait: wait, Mode: w.o.Mode, Visibility: w.o.Visibility,
			Kind: w.o.Kind, inOrderBatch: true})
		for _, m := range msgs {
			m.claimBegan = began
		}
		if err != nil {
			if done, err := w.claimFailed(ctx, err, openBefore); done {
				return err
			}
			continue
		}
		w.dispatch(msgs)
	}
	return nil
}

// awaitRoom waits until a handler is idle again, ctx ends (nil) or the
// session does (its error).
func (w *worker) awaitRoom(ctx context.Context) error {
	select {
	case <-w.freed:
	case <-ctx.Done():
	case <-w.s.Done():
		return w.s.Err()
	}
	return nil
}

// claimFailed handles a claim's error: done says fetch ends (with err);
// otherwise it has waited as the error asks and fetch claims again.
func (w *worker) claimFailed(ctx context.Context, err error, openBefore int) (done bool, _ error) {
	switch {
	case errors.Is(err, ErrEmpty):
		// Only a claim made with nothing of ours open proves the queue
		// has nothing ready: ordered and per-key claims skip what our own
		// open messages hold back.
		if w.o.Drain && openBefore == 0 {
			return true, nil
		}
		if w.openCount() > 0 {
			w.pause(ctx, w.settled)
		}
		return false, nil
	case ctx.Err() != nil:
		return true, nil
	case errors.Is(err, ErrSessionLost), errors.Is(err, ErrClosed):
		return true, err
	}
	// The database is unreachable or similar: back off and retry.
	w.pause(ctx, nil)
	return false, nil
}

// pausedNotice logs that the worker's queue is paused when it starts on
// one: it would otherwise wait without a word (or, draining, end at once).
func (w *worker) pausedNotice(ctx context.Context) {
	paused, err := w.c.drv.NoTx().QueuePaused(ctx, w.queue)
	if err == nil && paused {
		w.c.opts.Logger.Info("baton: the queue is paused: the worker waits for it to be resumed (baton queue resume, ResumeQueue)", "queue", w.queue)
	}
}

// pause waits a poll interval, or less when ch (if any) or ctx fires.
func (w *worker) pause(ctx context.Context, ch <-chan struct{}) {
	t := time.NewTimer(w.c.opts.PollInterval)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}

// dispatch hands claimed messages to the idle handlers.
func (w *worker) dispatch(msgs []*Message) {
	w.mu.Lock()
	w.open += len(msgs)
	w.busy += len(msgs)
	w.mu.Unlock()
	// A new in-order batch: everything of the last one is settled.
	w.broken.Store(false)
	for _, m := range msgs {
		w.jobs <- m
	}
}

// handler runs messages until the jobs run out; once stop ends, a claimed
// message it has not started goes back to the queue unhandled, its
// attempt not counted.
func (w *worker) handler(stop, ctx context.Context) {
	defer w.wg.Done()
	for m := range w.jobs {
		w.results <- w.runOne(stop, ctx, m)
		w.mu.Lock()
		w.busy--
		w.mu.Unlock()
		select {
		case w.freed <- struct{}{}:
		default:
		}
	}
}

// startHeld starts a held message of an in-order batch; when it cannot,
// ok is false and r is what to settle: cancelled meanwhile (it ends
// cancelled, never having run), or no longer ours (its lease ran out and
// it went back to the queue untouched), or the database did not answer
// (it goes back untouched when its lease runs out).
func (w *worker) startHeld(ctx context.Context, m *Message) (r result, ok bool) {
	err := w.s.start(ctx, m, w.o.Visibility)
	switch {
	case err == nil:
		return result{}, true
	case errors.Is(err, ErrNotClaimed) && errors.Is(w.c.claimLostCause(ctx, m.ID), ErrCancelled):
		return result{m: m, err: fmt.Errorf("%w before it started", ErrCancelled)}, false
	case !errors.Is(err, ErrNotClaimed):
		w.c.log.Err(fmt.Sprintf("start message %d of queue %q", m.ID, m.Queue), err)
	}
	return result{m: m, lost: true}, false
}

// runOne runs the handler on a claimed message, unless it must go back
// unstarted, and returns the outcome to settle.
func (w *worker) runOne(stop, ctx context.Context, m *Message) result {
	if stop.Err() != nil || w.broken.Load() || w.c.paused.givesBack(m) {
		// Shut down (a claim that raced the stop), an earlier message of
		// this in-order batch failed, or the queue was paused: give it
		// back unhandled, keeping its place.
		return result{m: m, unstarted: true}
	}
	if m.held {
		// Behind the head of an in-order batch: its claim counts as a run
		// only from here.
		if r, ok := w.startHeld(ctx, m); !ok {
			w.broken.Store(true) // the next ones must not run before it
			return r
		}
	} else if time.Since(m.claimedAt) > w.o.Visibility/3 {
		// A claim that waited for its handler: renew it before starting,
		// and skip it if it is no longer ours.
		if err := w.s.Extend(ctx, m, w.o.Visibility); errors.Is(err, ErrNotClaimed) {
			return result{m: m, lost: true}
		}
	}
	began := time.Now()
	hctx, span := w.c.spans.StartProcess(ctx, m.meta.Context, m.Queue, m.ID, m.Attempt)
	err := w.handle(hctx, m)
	w.ran(time.Since(began))
	tracing.End(span, err)
	w.c.opts.Observer.HandlerDone(w.queue, m.Kind, outcome(m, err, w.s.Err() != nil && !errors.Is(w.s.Err(), ErrClosed)), time.Since(began))
	if err != nil {
		w.onError(m, err)
	}
	if err != nil && w.o.Mode == Ordered {
		w.broken.Store(true)
	}
	return result{m: m, err: err}
}

// handle runs the handler on one message, keeping its claim alive, within
// the message's timeout (or the worker's).
func (w *worker) handle(ctx context.Context, m *Message) (err error) {
	mctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	defer cancel()
	defer w.c.trackRunning(m.ID, cancelCause)()
	defer func() {
		// A handler that returns its context's error says why the context
		// ended (cancelled, timed out): the cause is recorded with it. A
		// message cancelled while it ran ends cancelled, whatever it returned.
		cause := context.Cause(mctx)
		if err == nil && errors.Is(cause, ErrCancelled) {
			// It ignored the cancellation: the message ends cancelled all
			// the same (a handler that completed it in its own
			// transaction, CompleteTx, did so first: nothing is left to
			// cancel).
			err = fmt.Errorf("%w while it ran (the handler returned nil)", ErrCancelled)
			return
		}
		if err == nil || cause == nil || errors.Is(err, cause) {
			return
		}
		if errors.Is(cause, ErrCancelled) {
			err = fmt.Errorf("%w: %w", ErrCancelled, err)
		} else if errors.Is(err, mctx.Err()) {
			err = fmt.Errorf("%w: %v", err, cause)
		}
	}()
	if timeout := w.timeout(m); timeout > 0 {
		var tcancel context.CancelFunc
		mctx, tcancel = context.WithTimeoutCause(mctx, timeout, handlerTimeout(timeout))
		defer tcancel()
	}
	// The claim is renewed every third of its lease by a timer, not a
	// goroutine of its own: most handlers end before the first renewal.
	// Once the handler returns, mctx is cancelled and a renewal does
	// nothing more.
	var timer atomic.Pointer[time.Timer]
	var renew func()
	renew = func() {
		if mctx.Err() != nil {
			return
		}
		if err := w.s.Extend(mctx, m, w.o.Visibility); errors.Is(err, ErrNotClaimed) {
			// Cancelled (its notification did not come), or someone
			// else may have it now.
			cancelCause(w.c.claimLostCause(mctx, m.ID))
			return
		}
		timer.Store(time.AfterFunc(w.o.Visibility/3, renew))
	}
	timer.Store(time.AfterFunc(w.o.Visibility/3, renew))
	defer func() { timer.Load().Stop() }()
	return w.run(mctx, m)
}

// handlerTimeout is the cause of a handler's context when its run lasted
// longer than its timeout: context.DeadlineExceeded, whose words the
// handler's own error (ctx.Err()) already says, so they are not repeated.
type handlerTimeout time.Duration

func (e handlerTimeout) Error() string {
	return fmt.Sprintf("handler ran longer than its timeout %v", time.Duration(e))
}

func (handlerTimeout) Unwrap() error { return context.DeadlineExceeded }

// timeout is the bound of a handler run of the message: its own, else its
// kind's, else the worker's.
func (w *worker) timeout(m *Message) time.Duration {
	if ms := m.meta.TimeoutMS; ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	if w.o.kinds != nil {
		if k, ok := w.o.kinds.lookup(m.Kind); ok && k.timeout > 0 {
			return k.timeout
		}
	}
	return w.o.Timeout
}

// completer settles finished messages: acknowledgements in batches (one
// statement for all that finished meanwhile), retries and failures one by
// one. It uses contexts of its own: a shutdown must not lose the outcome of
// a finished handler.
func (w *worker) completer() {
	for r := range w.results {
		batch := []result{r}
	more:
		for len(batch) < 500 {
			select {
			case r, ok := <-w.results:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		if w.s.Err() != nil && !errors.Is(w.s.Err(), ErrClosed) {
			// Lost: its claims go back to the queue when the client
			// deletes the session; nothing can be settled with it.
			w.settle(len(batch))
			continue
		}
		w.settleBatch(batch)
		w.settle(len(batch))
	}
}

// settleBatch settles finished messages: acknowledgements in one
// statement, the others one by one.
func (w *worker) settleBatch(batch []result) {
	ctx, cancel := context.WithTimeout(context.Background(), w.c.opts.Lease)
	defer cancel()
	var acks []driver.Claim
	var acked []*Message
	for _, r := range batch {
		switch {
		case r.lost:
		case r.unstarted:
			err := w.s.giveBack(ctx, r.m)
			if errors.Is(err, ErrNotClaimed) {
				// Cancelled meanwhile (a cancelled claim is not given
				// back), if it is still ours.
				err = w.s.cancelled(ctx, r.m, fmt.Errorf("%w before it started", ErrCancelled))
			}
			w.logSettle(r.m, "give back", err)
		case r.err == nil:
			acks, acked = append(acks, w.s.claim(r.m)), append(acked, r.m)
		case errors.Is(r.err, ErrCancelled):
			w.logSettle(r.m, "cancel", w.s.cancelled(ctx, r.m, r.err))
		case errors.Is(r.err, ErrPermanent):
			w.logSettle(r.m, "fail", w.s.finishDead(ctx, r.m, r.err))
		default:
			w.logSettle(r.m, "retry", w.s.Retry(ctx, r.m, r.err))
		}
	}
	if len(acks) == 0 {
		return
	}
	n, err := w.c.mq.Complete(ctx, w.s.id, acks)
	if err != nil || n < len(acks) {
		// One by one, so that a bad batch loses nothing it can keep, and
		// a message cancelled before its handler heard of it (a claim
		// the acknowledgement refuses) ends cancelled.
		n = 0
		for i, a := range acks {
			k, err := w.c.mq.Complete(ctx, w.s.id, []driver.Claim{a})
			if err == nil && k == 0 {
				err = w.s.cancelled(ctx, acked[i], fmt.Errorf("%w while it ran (before its handler heard of it)", ErrCancelled))
			}
			w.logSettle(acked[i], "complete", err)
			n += k
		}
	}
	w.c.mq.CountFinished(w.queue, int64(n), 0)
	if w.o.Mode != Parallel {
		// The next message of the queue or of a key may go now.
		w.c.queueWaits.Wake(w.queue)
	}
}

// onError calls the error hook of a failed attempt.
func (w *worker) onError(m *Message, err error) {
	if w.o.OnError == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			w.c.opts.Logger.Error("baton: the worker's OnError hook panicked", "queue", w.queue, "message", m.ID, "panic", p)
		}
	}()
	e := attemptError(m, err)
	w.o.OnError(m, AttemptError{At: e.At, Attempt: e.Attempt, Error: e.Error, Stack: e.Stack})
}

// logSettle logs a failure to settle a message (its claim then runs out
// and the message is delivered again); a claim that is no longer ours is
// expected after a cancellation or a lost lease and is not logged.
func (w *worker) logSettle(m *Message, what string, err error) {
	if err != nil && !errors.Is(err, ErrNotClaimed) {
		w.c.opts.Logger.Warn("baton: worker could not settle a message", "queue", w.queue, "message", m.ID, "op", what, "error", err)
	}
}

// settle records that n open messages are settled.
func (w *worker) settle(n int) {
	w.mu.Lock()
	w.open -= n
	w.mu.Unlock()
	select {
	case w.settled <- struct{}{}:
	default:
	}
}

func (w *worker) run(ctx context.Context, m *Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{value: p, stack: string(debug.Stack())}
		}
	}()
	return w.h(ctx, m)
}
