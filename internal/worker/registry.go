package worker

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/errs"
)

// Registry is a process's state of its workers: the handlers of the
// messages it runs, by id, so that a cancellation reaches them, and the
// queues it knows paused, so that its workers start none of the messages
// they claimed from one. A Client owns one; its workers share it.
type Registry struct {
	cfg RegistryConfig

	mu      sync.Mutex
	running map[int64]context.CancelCauseFunc // by message id

	paused paused
}

// RegistryConfig is what a Registry asks of its client.
type RegistryConfig struct {
	// Lease bounds each background check.
	Lease  time.Duration
	Logger *slog.Logger
	// Tasks counts the background checks: the client waits for them when
	// it closes.
	Tasks *sync.WaitGroup
	// CancelRequested reads whether the message id was cancelled.
	CancelRequested func(ctx context.Context, id int64) (bool, error)
	// QueuePaused reads whether the queue is paused.
	QueuePaused func(ctx context.Context, queue string) (bool, error)
	// Announce tells the other processes that the message id was
	// cancelled while it ran.
	Announce func(id int64)
}

// NewRegistry returns an empty registry.
func NewRegistry(cfg RegistryConfig) *Registry {
	return &Registry{cfg: cfg, running: map[int64]context.CancelCauseFunc{}}
}

// Cancelled tells every process that the running message id was
// cancelled: this one at once, the others by Announce. A process that
// misses it learns at its next lease extension, which a cancelled claim
// refuses.
func (r *Registry) Cancelled(id int64) {
	r.cancelLocal(id)
	r.cfg.Announce(id)
}

// OnCancel handles a notification of a cancellation: its payload is the
// message's id.
func (r *Registry) OnCancel(payload string) {
	if id, err := strconv.ParseInt(payload, 10, 64); err == nil {
		r.cancelLocal(id)
	}
}

// cancelLocal cancels the handler of a message this process runs, once
// the database confirms that the message was cancelled: a notification
// only names an id, and on PostgreSQL another schema's baton shares the
// channel.
func (r *Registry) cancelLocal(id int64) {
	r.mu.Lock()
	stop := r.running[id]
	r.mu.Unlock()
	if stop == nil {
		return
	}
	r.ask(func(ctx context.Context) {
		cancelled, err := r.cfg.CancelRequested(ctx, id)
		switch {
		case err != nil:
			r.cfg.Logger.Warn("baton: checking a cancellation (the lease renewal will see it)", "message", id, "error", err)
		case cancelled:
			stop(errs.ErrCancelled)
		}
	})
}

// ask runs f as a background check (counted in Tasks), with a lease's
// time to ask the database about what a notification names.
func (r *Registry) ask(f func(ctx context.Context)) {
	r.cfg.Tasks.Add(1)
	go func() {
		defer r.cfg.Tasks.Done()
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Lease)
		defer cancel()
		f(ctx)
	}()
}

// lostCause is why a running message's claim was refused: ErrCancelled
// when the message was cancelled (a process that missed the notification
// learns of it here), nil otherwise (its claim ran out: someone else may
// have it now) or when the database cannot tell.
func (r *Registry) lostCause(ctx context.Context, id int64) error {
	if cancelled, err := r.cfg.CancelRequested(ctx, id); err == nil && cancelled {
		return errs.ErrCancelled
	}
	return nil
}

// track registers the handler of a running message for cancellation;
// untrack unregisters it.
func (r *Registry) track(id int64, stop context.CancelCauseFunc) {
	r.mu.Lock()
	r.running[id] = stop
	r.mu.Unlock()
}

func (r *Registry) untrack(id int64) {
	r.mu.Lock()
	delete(r.running, id)
	r.mu.Unlock()
}

// SetPaused records whether queue is paused, as this process knows it.
func (r *Registry) SetPaused(queue string, paused bool) { r.paused.set(queue, paused) }

// Paused reports whether this process knows queue paused.
func (r *Registry) Paused(queue string) bool {
	r.paused.mu.Lock()
	defer r.paused.mu.Unlock()
	_, paused := r.paused.since[queue]
	return paused
}

// OnPause handles a notification of a queue's pause or resumption: the
// database says whether the queue is paused (a notification only names
// it, and on PostgreSQL another schema's baton shares the channel).
func (r *Registry) OnPause(queue string) {
	r.ask(func(ctx context.Context) {
		paused, err := r.cfg.QueuePaused(ctx, queue)
		if err != nil {
			r.cfg.Logger.Warn("baton: checking a queue's pause", "queue", queue, "error", err)
			return
		}
		r.paused.set(queue, paused)
	})
}

// paused are the queues this process knows paused (SetPaused, OnPause),
// and since when. n mirrors len(since): a worker of a client that knows
// no paused queue reads one atomic and takes no lock before each message
// (givesBack).
type paused struct {
	mu    sync.Mutex
	since map[string]time.Time
	n     atomic.Int32
}

func (p *paused) set(queue string, paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.since == nil {
		p.since = map[string]time.Time{}
	}
	if !paused {
		delete(p.since, queue)
	} else if _, known := p.since[queue]; !known {
		p.since[queue] = time.Now()
	}
	p.n.Store(int32(len(p.since)))
}

// givesBack reports whether a worker must give back unstarted a message
// of queue whose claim began at began: the queue is paused, as far as
// this process knows. A claim that began after the pause was known was
// made from a queue resumed since (claims skip paused queues): the
// resumption's notification was missed, and the queue is known resumed
// again.
func (p *paused) givesBack(queue string, began time.Time) bool {
	if p.n.Load() == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	since, paused := p.since[queue]
	switch {
	case !paused:
		return false
	case began.After(since):
		delete(p.since, queue)
		p.n.Store(int32(len(p.since)))
		return false
	}
	return true
}
