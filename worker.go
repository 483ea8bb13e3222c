package baton

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
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
	// Drain makes Work return once no message is ready and none is in
	// flight (the cron pattern) instead of waiting for more.
	Drain bool
	// Name is the worker session's owner name (default "worker QUEUE").
	Name string
}

// Work runs handler on the queue's messages until ctx ends (or, with
// Drain, until the queue has nothing ready), then shuts down gracefully:
// it stops claiming, lets running handlers finish within the grace period,
// cancels the rest and ends its session, which gives their messages back to
// the queue. It returns nil after a graceful stop.
func (c *Client) Work(ctx context.Context, queue string, handler Handler, opts WorkerOptions) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	if handler == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalid)
	}
	if opts.Concurrency <= 0 || opts.Mode == Ordered {
		opts.Concurrency = 1
	}
	if opts.Visibility <= 0 {
		opts.Visibility = 30 * time.Second
	}
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Second
	}
	if opts.Name == "" {
		opts.Name = "worker " + queue
	}
	s, err := c.NewSession(ctx, SessionOptions{Name: opts.Name})
	if err != nil {
		return err
	}
	w := &worker{c: c, s: s, queue: queue, h: handler, o: opts, slots: make(chan struct{}, opts.Concurrency)}
	// Handler contexts outlive ctx by the grace period.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	runErr := w.loop(ctx, hctx)
	// Graceful shutdown: wait for handlers, then cancel them.
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(opts.Grace):
		hcancel()
		<-done
	}
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Lease)
	defer cancel()
	if err := s.Close(closeCtx); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

type worker struct {
	c     *Client
	s     *Session
	queue string
	h     Handler
	o     WorkerOptions
	slots chan struct{}
	wg    sync.WaitGroup
}

func (w *worker) loop(ctx, hctx context.Context) error {
	for {
		if ctx.Err() != nil {
			return nil
		}
		// Wait for a free slot, then claim for every free slot.
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		case <-w.s.Done():
			return w.s.Err()
		}
		free := 1
		for len(w.slots) < cap(w.slots) {
			w.slots <- struct{}{}
			free++
		}
		wait := Forever
		if w.o.Drain {
			wait = 0
		}
		msgs, err := w.s.Claim(ctx, w.queue, ClaimOptions{Max: free, Wait: wait, Mode: w.o.Mode, Visibility: w.o.Visibility})
		for i := len(msgs); i < free; i++ {
			<-w.slots
		}
		switch {
		case errors.Is(err, ErrEmpty) && w.o.Drain:
			if len(w.slots) == 0 {
				return nil
			}
			// Something is in flight: a retry may come back; wait a beat.
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
				return nil
			}
			continue
		case errors.Is(err, ErrEmpty), ctx.Err() != nil:
			continue
		case errors.Is(err, ErrSessionLost):
			return err
		case err != nil:
			// The database is unreachable or similar: back off and retry.
			select {
			case <-time.After(w.c.opts.PollInterval):
			case <-ctx.Done():
			}
			continue
		}
		for _, m := range msgs {
			w.wg.Add(1)
			go w.handle(hctx, m)
		}
	}
}

func (w *worker) handle(ctx context.Context, m *Message) {
	defer w.wg.Done()
	defer func() { <-w.slots }()
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Keep the claim while the handler runs.
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(w.o.Visibility / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := w.s.Extend(mctx, m, w.o.Visibility); errors.Is(err, ErrNotClaimed) {
					cancel() // someone else may have it now
					return
				}
			}
		}
	}()
	err := w.run(mctx, m)
	close(stop)
	// Acknowledge with a context of its own: a shutdown must not lose the
	// outcome of a finished handler.
	actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), w.c.opts.Lease)
	defer acancel()
	switch {
	case err == nil:
		_ = w.s.Ack(actx, m)
	case errors.Is(err, ErrPermanent):
		_ = w.s.Fail(actx, m, err.Error())
	default:
		_ = w.s.Retry(actx, m, err)
	}
}

func (w *worker) run(ctx context.Context, m *Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return w.h(ctx, m)
}
