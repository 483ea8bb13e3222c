package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/errs"
)

// worker runs one session's claims: fetch claims for the idle handler
// slots, each slot runs what it receives, and the completer settles the
// outcomes.
type worker[M any] struct {
	cfg *Config[M]
	s   Session[M]
	reg *Registry
	wg  sync.WaitGroup

	jobs    chan M         // claimed, handed to an idle handler
	results chan result[M] // finished, not yet acknowledged
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

type result[M any] struct {
	m         M
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
func (w *worker[M]) claimMax(free int) int {
	if !w.cfg.Ordered {
		return free
	}
	per := time.Duration(w.runTime.Load())
	if per <= 0 {
		return maxInOrderBatch
	}
	return int(min(max(int64(w.cfg.Visibility/3/per), 1), maxInOrderBatch))
}

// ran records how long a run took: the recent pace decays by half per run
// towards faster runs, and follows slower ones at once.
func (w *worker[M]) ran(d time.Duration) {
	w.runTime.Store(max(int64(d), w.runTime.Load()/2))
}

func (w *worker[M]) loop(ctx, hctx context.Context) error {
	// A claim never takes more than the idle handlers (or, Ordered, an
	// in-order batch): each claimed message is received by one at once.
	w.jobs = make(chan M, w.claimMax(w.cfg.Concurrency))
	w.results = make(chan result[M], w.cfg.Concurrency+resultsBuffer)
	w.settled = make(chan struct{}, 1)
	w.freed = make(chan struct{}, 1)
	for i := 0; i < w.cfg.Concurrency; i++ {
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

func (w *worker[M]) counts() (open, busy int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.open, w.busy
}

func (w *worker[M]) openCount() int {
	open, _ := w.counts()
	return open
}

// fetch claims messages whenever a handler is idle, as many as there are
// idle handlers (claimMax), until ctx ends or, with Drain, until nothing
// is ready and nothing is open. Nothing is claimed ahead of the handlers:
// a claim counts an attempt, which only a run that starts may use (a
// killed worker's claims were all running), and a message waiting behind
// a busy handler would wait while other workers are idle.
func (w *worker[M]) fetch(ctx context.Context) error {
	w.pausedNotice(ctx)
	for ctx.Err() == nil {
		openBefore, busy := w.counts()
		free := w.cfg.Concurrency - busy
		if free <= 0 {
			if err := w.awaitRoom(ctx); err != nil {
				return err
			}
			continue
		}
		// A drain ends once nothing is ready: don't block. Claims are
		// retried when something settles (or after a poll interval).
		msgs, err := w.s.Take(ctx, w.claimMax(free), !w.cfg.Drain)
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
func (w *worker[M]) awaitRoom(ctx context.Context) error {
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
func (w *worker[M]) claimFailed(ctx context.Context, err error, openBefore int) (done bool, _ error) {
	switch {
	case errors.Is(err, errs.ErrEmpty):
		// Only a claim made with nothing of ours open proves the queue
		// has nothing ready: ordered and per-key claims skip what our own
		// open messages hold back.
		if w.cfg.Drain && openBefore == 0 {
			return w.cfg.Released == nil || !w.cfg.Released(ctx), nil
		}
		if w.openCount() > 0 {
			w.pause(ctx, w.settled)
		}
		return false, nil
	case ctx.Err() != nil:
		return true, nil
	case errors.Is(err, errs.ErrSessionLost), errors.Is(err, errs.ErrClosed):
		return true, err
	}
	// The database is unreachable or similar: back off and retry.
	w.pause(ctx, nil)
	return false, nil
}

// pausedNotice logs that the worker's queue is paused when it starts on
// one: it would otherwise wait without a word (or, draining, end at once).
func (w *worker[M]) pausedNotice(ctx context.Context) {
	paused, err := w.reg.cfg.QueuePaused(ctx, w.cfg.Queue)
	if err == nil && paused {
		w.cfg.Logger.Info("baton: the queue is paused: the worker waits for it to be resumed (baton queue resume, ResumeQueue)", "queue", w.cfg.Queue)
	}
}

// pause waits a poll interval, or less when ch (if any) or ctx fires.
func (w *worker[M]) pause(ctx context.Context, ch <-chan struct{}) {
	t := time.NewTimer(w.cfg.PollInterval)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}

// dispatch hands claimed messages to the idle handlers.
func (w *worker[M]) dispatch(msgs []M) {
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
func (w *worker[M]) handler(stop, ctx context.Context) {
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
func (w *worker[M]) startHeld(ctx context.Context, m M) (r result[M], ok bool) {
	err := w.s.Start(ctx, m, w.cfg.Visibility)
	switch {
	case err == nil:
		return result[M]{}, true
	case errors.Is(err, errs.ErrNotClaimed) && errors.Is(w.reg.lostCause(ctx, w.s.MessageID(m)), errs.ErrCancelled):
		return result[M]{m: m, err: fmt.Errorf("%w before it started", errs.ErrCancelled)}, false
	case !errors.Is(err, errs.ErrNotClaimed) && !errors.Is(err, context.Canceled):
		w.cfg.Logger.Warn("baton: " + fmt.Sprintf("start message %d of queue %q: %v", w.s.MessageID(m), w.cfg.Queue, err))
	}
	return result[M]{m: m, lost: true}, false
}

// runOne runs the handler on a claimed message, unless it must go back
// unstarted, and returns the outcome to settle.
func (w *worker[M]) runOne(stop, ctx context.Context, m M) result[M] {
	if stop.Err() != nil || w.broken.Load() || w.pausedHere(m) {
		// Shut down (a claim that raced the stop), an earlier message of
		// this in-order batch failed, or the queue was paused: give it
		// back unhandled, keeping its place.
		return result[M]{m: m, unstarted: true}
	}
	if r, ok := w.ready(ctx, m); !ok {
		return r
	}
	began := time.Now()
	hctx, span := w.s.Begin(ctx, m)
	err := w.handle(hctx, m)
	w.ran(time.Since(began))
	w.s.End(span, m, err, began)
	if err != nil && w.cfg.Ordered {
		w.broken.Store(true)
	}
	return result[M]{m: m, err: err}
}

// ready readies a claimed message to start: a held one is started, a
// claim that waited for its handler renewed. false, with the outcome to
// settle, when it must not run.
func (w *worker[M]) ready(ctx context.Context, m M) (result[M], bool) {
	if w.s.Held(m) {
		// Behind the head of an in-order batch: its claim counts as a run
		// only from here.
		r, ok := w.startHeld(ctx, m)
		if !ok {
			w.broken.Store(true) // the next ones must not run before it
		}
		return r, ok
	}
	if time.Since(w.s.ClaimedAt(m)) > w.cfg.Visibility/3 {
		// A claim that waited for its handler: renew it before starting,
		// and skip it if it is no longer ours.
		if err := w.s.Extend(ctx, m, w.cfg.Visibility); errors.Is(err, errs.ErrNotClaimed) {
			return result[M]{m: m, lost: true}, false
		}
	}
	return result[M]{}, true
}

// pausedHere reports whether m's queue is paused, as far as this process
// knows: one atomic read while it knows no paused queue.
func (w *worker[M]) pausedHere(m M) bool {
	return w.reg.paused.n.Load() != 0 && w.reg.paused.givesBack(w.cfg.Queue, w.s.ClaimBegan(m))
}

// withCause is the outcome of a handler run whose context is mctx. A
// handler that returns its context's error says why the context ended
// (cancelled, timed out): the cause is recorded with it. A message
// cancelled while it ran ends cancelled, whatever it returned.
func withCause(mctx context.Context, err error) error {
	cause := context.Cause(mctx)
	if err == nil && errors.Is(cause, errs.ErrCancelled) {
		// It ignored the cancellation: the message ends cancelled all
		// the same (a handler that completed it in its own
		// transaction, CompleteTx, did so first: nothing is left to
		// cancel).
		return fmt.Errorf("%w while it ran (the handler returned nil)", errs.ErrCancelled)
	}
	switch {
	case err == nil || cause == nil || errors.Is(err, cause):
		return err
	case errors.Is(cause, errs.ErrCancelled):
		return fmt.Errorf("%w: %w", errs.ErrCancelled, err)
	case errors.Is(err, mctx.Err()):
		return fmt.Errorf("%w: %v", err, cause)
	}
	return err
}

// handle runs the handler on one message, keeping its claim alive, within
// the message's timeout (or the worker's).
func (w *worker[M]) handle(ctx context.Context, m M) (err error) {
	mctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	defer cancel()
	id := w.s.MessageID(m)
	w.reg.track(id, cancelCause)
	defer w.reg.untrack(id)
	defer func() { err = withCause(mctx, err) }()
	if timeout := w.s.Timeout(m); timeout > 0 {
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
		if err := w.s.Extend(mctx, m, w.cfg.Visibility); errors.Is(err, errs.ErrNotClaimed) {
			// Cancelled (its notification did not come), or someone
			// else may have it now.
			cancelCause(w.reg.lostCause(mctx, id))
			return
		}
		timer.Store(time.AfterFunc(w.cfg.Visibility/3, renew))
	}
	timer.Store(time.AfterFunc(w.cfg.Visibility/3, renew))
	defer func() { timer.Load().Stop() }()
	return w.s.Handle(mctx, m)
}

// handlerTimeout is the cause of a handler's context when its run lasted
// longer than its timeout: context.DeadlineExceeded, whose words the
// handler's own error (ctx.Err()) already says, so they are not repeated.
type handlerTimeout time.Duration

func (e handlerTimeout) Error() string {
	return fmt.Sprintf("handler ran longer than its timeout %v", time.Duration(e))
}

func (handlerTimeout) Unwrap() error { return context.DeadlineExceeded }

// completer settles finished messages: acknowledgements in batches (one
// statement for all that finished meanwhile), retries and failures one by
// one. It uses contexts of its own: a shutdown must not lose the outcome of
// a finished handler.
func (w *worker[M]) completer() {
	for r := range w.results {
		batch := []result[M]{r}
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
		if w.s.Err() != nil && !errors.Is(w.s.Err(), errs.ErrClosed) {
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
func (w *worker[M]) settleBatch(batch []result[M]) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Lease)
	defer cancel()
	var acked []M
	for _, r := range batch {
		if !r.lost && !r.unstarted && r.err == nil {
			acked = append(acked, r.m)
			continue
		}
		w.settleOne(ctx, r)
	}
	if len(acked) > 0 {
		w.acknowledge(ctx, acked)
	}
}

// settleOne settles a message that did not run to success: gives it
// back, or ends its failed run cancelled, dead or retried.
func (w *worker[M]) settleOne(ctx context.Context, r result[M]) {
	switch {
	case r.lost:
	case r.unstarted:
		err := w.s.GiveBack(ctx, r.m)
		if errors.Is(err, errs.ErrNotClaimed) {
			// Cancelled meanwhile (a cancelled claim is not given
			// back), if it is still ours.
			err = w.s.Cancel(ctx, r.m, fmt.Errorf("%w before it started", errs.ErrCancelled))
		}
		w.logSettle(r.m, "give back", err)
	case errors.Is(r.err, errs.ErrCancelled):
		w.logSettle(r.m, "cancel", w.s.Cancel(ctx, r.m, r.err))
	case snoozed(r.err):
		d, _ := Snoozed(r.err)
		err := w.s.Snooze(ctx, r.m, d)
		if errors.Is(err, errs.ErrCancelled) {
			err = nil // cancelled meanwhile: it ended so
		}
		w.logSettle(r.m, "snooze", err)
	case errors.Is(r.err, errs.ErrPermanent):
		w.logSettle(r.m, "fail", w.s.Dead(ctx, r.m, r.err))
	default:
		w.logSettle(r.m, "retry", w.s.Retry(ctx, r.m, r.err))
	}
}

// snoozed reports whether a run's error asks for a snooze.
func snoozed(err error) bool {
	_, ok := Snoozed(err)
	return ok
}

// acknowledge completes messages that ran to success, in one statement.
func (w *worker[M]) acknowledge(ctx context.Context, acked []M) {
	n, err := w.s.Complete(ctx, acked)
	if err != nil || n < len(acked) {
		// One by one, so that a bad batch loses nothing it can keep, and
		// a message cancelled before its handler heard of it (a claim
		// the acknowledgement refuses) ends cancelled.
		n = 0
		for i := range acked {
			k, err := w.s.Complete(ctx, acked[i:i+1])
			if err == nil && k == 0 {
				err = w.s.Cancel(ctx, acked[i], fmt.Errorf("%w while it ran (before its handler heard of it)", errs.ErrCancelled))
			}
			w.logSettle(acked[i], "complete", err)
			n += k
		}
	}
	w.s.Completed(n)
}

// logSettle logs a failure to settle a message (its claim then runs out
// and the message is delivered again); a claim that is no longer ours is
// expected after a cancellation or a lost lease and is not logged.
func (w *worker[M]) logSettle(m M, what string, err error) {
	if err != nil && !errors.Is(err, errs.ErrNotClaimed) {
		w.cfg.Logger.Warn("baton: worker could not settle a message", "queue", w.cfg.Queue, "message", w.s.MessageID(m), "op", what, "error", err)
	}
}

// settle records that n open messages are settled.
func (w *worker[M]) settle(n int) {
	w.mu.Lock()
	w.open -= n
	w.mu.Unlock()
	select {
	case w.settled <- struct{}{}:
	default:
	}
}
