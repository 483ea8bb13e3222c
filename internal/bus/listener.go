package bus

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/maintain"
)

// Config configures a Listener.
type Config struct {
	Notifier driver.Notifier
	ClientID string
	// Lease bounds each attempt to start the driver's listener;
	// PollInterval is the pause between attempts, and the driver's own
	// poll interval.
	Lease, PollInterval time.Duration
	// Quit is closed when the client closes: it cancels a start under way.
	Quit <-chan struct{}
	// CloseIdle (Options.MaxConns) closes the listener each time no lock
	// waits, unless a queue consumer or Listen used it (Listening).
	CloseIdle bool
	// Kicked is called by every wait that needs the listener, before it
	// starts it: the client then prepares its statements.
	Kicked func()
	// Logf reports a failed start that is tried again.
	Logf func(format string, a ...any)
	// Routes take what the listener brings.
	Routes Routes
}

// Listener is a client's listener: the driver's listening connection,
// started by the first waiter and stopped for good by Close. Its Router
// dispatches what arrives.
type Listener struct {
	*Router
	cfg Config
	wg  sync.WaitGroup

	mu       sync.Mutex
	stop     func()        // nil until the driver's listener runs
	starting chan struct{} // closed when the start under way ends
	err      error         // how the last start failed
	closed   bool          // Close stopped the listener: it does not start again
	// kept: a queue consumer or Listen used the listener, which then runs
	// until Close; otherwise CloseIdle closes it once no lock waits.
	kept atomic.Bool
	idle chan struct{} // LocksIdle tells closeIdle
}

// New makes a client's listener, which starts on the first wait.
func New(cfg Config) *Listener {
	l := &Listener{Router: NewRouter(cfg.Routes), cfg: cfg, idle: make(chan struct{}, 1)}
	if cfg.CloseIdle {
		l.wg.Add(1)
		go l.closeIdle()
	}
	return l
}

// Listening starts the driver's listener (wake-ups of lock waiters and
// queue consumers, notifications, the waiters' safety-net poll) unless it
// runs already, and returns once it runs, or when ctx ends first (the start
// then goes on for the next waiter). Every path that waits calls it before
// registering its waiter; anything that happened before the listener ran
// is caught by the wake it sends once started. The listener then runs
// until Close.
func (l *Listener) Listening(ctx context.Context) error {
	l.kept.Store(true)
	return l.LockListening(ctx)
}

// LockListening is Listening for a lock waiter, whose listener CloseIdle
// closes again once no lock waits.
func (l *Listener) LockListening(ctx context.Context) error {
	started, err := l.kick()
	if started == nil {
		return err
	}
	select {
	case <-started:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != nil {
		return nil
	}
	if l.closed {
		return errs.ErrClosed
	}
	return l.err
}

// Kick starts the driver's listener unless it runs or is starting already,
// without waiting: the heartbeat's restart for lock waiters whose listener
// could not start, which its start wakes. Its only error is ErrClosed.
func (l *Listener) Kick() error {
	_, err := l.kick()
	return err
}

// LocksIdle tells the listener that no lock waits any more: with
// CloseIdle, it closes unless kept.
func (l *Listener) LocksIdle() {
	if !l.cfg.CloseIdle {
		return
	}
	select {
	case l.idle <- struct{}{}:
	default: // told already
	}
}

// closeIdle closes the listener of a client with MaxConns each time no
// lock waits any more, unless a queue consumer or Listen uses it: a
// process that got its locks holds its one pool connection only. A waiter
// that comes meanwhile starts it again (kick); one whose start raced with
// the close is woken by the poll, and its heartbeat starts the listener
// again.
func (l *Listener) closeIdle() {
	defer l.wg.Done()
	for {
		select {
		case <-l.cfg.Quit:
			return
		case <-l.idle:
		}
		l.mu.Lock()
		if l.stop != nil && !l.kept.Load() && !l.cfg.Routes.Locks.Waiting() {
			l.stop()
			l.stop = nil
		}
		l.mu.Unlock()
	}
}

// kick starts the driver's listener unless it runs or is starting already,
// and returns the channel closed when the start ends (nil when it runs, or
// with ErrClosed after Close).
func (l *Listener) kick() (chan struct{}, error) {
	l.cfg.Kicked()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.stop != nil:
		return nil, nil
	case l.closed:
		return nil, errs.ErrClosed
	case l.starting == nil:
		l.starting = make(chan struct{})
		l.wg.Add(1)
		go l.start(l.starting)
	}
	return l.starting, nil
}

// start starts the driver's listener on behalf of every waiter, within a
// lease per attempt, three attempts a poll interval apart (a busy server
// can take longer than a short lease to accept one connection); a start
// that still fails is tried again by the next waiter.
func (l *Listener) start(done chan struct{}) {
	defer l.wg.Done()
	defer close(done)
	stop, err := l.listen()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starting = nil
	switch {
	case err != nil:
		l.err = fmt.Errorf("baton: listen: %w", err)
	case l.closed:
		stop() // Close came first
	default:
		l.stop, l.err = stop, nil
		l.Wake(nil)
		l.cfg.Routes.Queues.WakeAll()
	}
}

// listen starts the driver's listener: three attempts a poll interval
// apart, until Quit.
func (l *Listener) listen() (stop func(), err error) {
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			l.cfg.Logf("start listener: %v; trying again", err)
			select {
			case <-l.cfg.Quit:
			case <-time.After(l.cfg.PollInterval):
			}
		}
		if stop, err = l.listenOnce(); err == nil || maintain.Closed(l.cfg.Quit) {
			break
		}
	}
	return stop, err
}

// listenOnce is one attempt to start the driver's listener, within a lease
// and cancelled by Quit.
func (l *Listener) listenOnce() (func(), error) {
	ctx, cancel := maintain.Until(l.cfg.Quit, l.cfg.Lease)
	defer cancel()
	return l.cfg.Notifier.Listen(ctx, driver.ListenParams{ClientID: l.cfg.ClientID, Wake: l.Wake, Notify: l.Deliver, Interval: l.cfg.PollInterval})
}

// Close stops the listener if it runs, for good (a start under way stops
// it when it ends), and waits for its goroutines; call it once Quit is
// closed.
func (l *Listener) Close() {
	l.mu.Lock()
	l.closed = true
	if l.stop != nil {
		l.stop()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
