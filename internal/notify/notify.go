// Package notify is the engine of notifications: the checks of a channel
// and a payload, sending, and this process's listeners, to which the
// client's listener (internal/bus) hands each notification of a user's
// channel.
package notify

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sync"
	"unicode/utf8"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
)

// MaxPayload is the longest notification payload, in bytes.
const MaxPayload = 4000

var channelRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`) })

// ValidateChannel checks a user's channel name: 1 to 64 letters, digits,
// '_', '.', ':' or '-'.
func ValidateChannel(ch string) error {
	if !channelRE().MatchString(ch) {
		return fmt.Errorf("%w: channel %s: use 1 to 64 letters, digits, '_', '.', ':' or '-'", errs.ErrInvalid, errs.Quote(ch))
	}
	return nil
}

// Validate checks a notification: its channel, and a payload of valid
// UTF-8 of at most MaxPayload bytes.
func Validate(channel, payload string) error {
	if err := ValidateChannel(channel); err != nil {
		return err
	}
	if len(payload) > MaxPayload {
		return fmt.Errorf("%w: payload is %d bytes, more than %d", errs.ErrInvalid, len(payload), MaxPayload)
	}
	if !utf8.ValidString(payload) {
		return fmt.Errorf("%w: payload is not valid UTF-8", errs.ErrInvalid)
	}
	return nil
}

// Execer runs a statement in a caller's transaction.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Service sends notifications and keeps this process's listeners, whose
// notifications are of type T (made by the make function given to New).
type Service[T any] struct {
	drv  driver.Driver
	make func(channel, payload string) T

	mu        sync.Mutex
	listeners map[*Listener[T]]bool
	closed    bool
}

// New makes the service on drv; mk makes the notifications its listeners
// receive.
func New[T any](drv driver.Driver, mk func(channel, payload string) T) *Service[T] {
	return &Service[T]{drv: drv, make: mk, listeners: map[*Listener[T]]bool{}}
}

// Send sends payload to every listener of channel once its own
// transaction commits.
func (s *Service[T]) Send(ctx context.Context, channel, payload string) error {
	if err := Validate(channel, payload); err != nil {
		return err
	}
	if err := s.drv.Notifier().Notify(ctx, channel, payload); err != nil {
		return fmt.Errorf("baton: notify: %w", err)
	}
	return nil
}

// SendTx sends a notification in the caller's transaction tx: it goes
// out with tx's commit.
func (s *Service[T]) SendTx(ctx context.Context, tx Execer, channel, payload string) error {
	if err := Validate(channel, payload); err != nil {
		return err
	}
	q, args := s.drv.Notifier().NotifyStatement(channel, payload)
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("baton: notify: %w", err)
	}
	return nil
}

// Listen registers a listener of channels (each checked already);
// closed, if not nil, is called when it closes. It fails with ErrClosed
// once the service is closed.
func (s *Service[T]) Listen(channels []string, closed func()) (*Listener[T], error) {
	l := &Listener[T]{s: s, channels: map[string]bool{}, out: make(chan T), closing: make(chan struct{}),
		done: make(chan struct{}), onClose: closed}
	l.cond = sync.NewCond(&l.mu)
	for _, ch := range channels {
		l.channels[ch] = true
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errs.ErrClosed
	}
	s.listeners[l] = true
	s.mu.Unlock()
	go l.forward()
	return l, nil
}

// Deliver hands a notification to this process's listeners of its
// channel; it never blocks.
func (s *Service[T]) Deliver(channel, payload string) {
	s.mu.Lock()
	ls := make([]*Listener[T], 0, len(s.listeners))
	for l := range s.listeners {
		if l.channels[channel] {
			ls = append(ls, l)
		}
	}
	s.mu.Unlock()
	for _, l := range ls {
		l.push(s.make(channel, payload))
	}
}

// Close closes every listener; Listen fails from now on.
func (s *Service[T]) Close() {
	s.mu.Lock()
	s.closed = true
	ls := make([]*Listener[T], 0, len(s.listeners))
	for l := range s.listeners {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
}

// Listener receives the notifications of some channels until Close,
// buffered in memory: a listener that does not keep up never slows the
// others down and loses nothing.
type Listener[T any] struct {
	s        *Service[T]
	channels map[string]bool
	out      chan T
	onClose  func()
	mu       sync.Mutex
	cond     *sync.Cond
	buf      []T
	closed   bool
	closing  chan struct{} // closed by Close
	done     chan struct{}
}

// C delivers the notifications; it is closed by Close.
func (l *Listener[T]) C() <-chan T { return l.out }

// Close stops the listener and closes C.
func (l *Listener[T]) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.closing)
	l.cond.Broadcast()
	l.mu.Unlock()
	s := l.s
	s.mu.Lock()
	delete(s.listeners, l)
	s.mu.Unlock()
	if l.onClose != nil {
		l.onClose()
	}
	<-l.done
}

func (l *Listener[T]) push(n T) {
	l.mu.Lock()
	if !l.closed {
		l.buf = append(l.buf, n)
		l.cond.Signal()
	}
	l.mu.Unlock()
}

// forward moves buffered notifications to C, one at a time.
func (l *Listener[T]) forward() {
	defer close(l.done)
	defer close(l.out)
	for {
		l.mu.Lock()
		for len(l.buf) == 0 && !l.closed {
			l.cond.Wait()
		}
		if l.closed {
			l.mu.Unlock()
			return
		}
		n := l.buf[0]
		l.buf = l.buf[1:]
		l.mu.Unlock()
		select {
		case l.out <- n:
		case <-l.closing:
			return
		}
	}
}
