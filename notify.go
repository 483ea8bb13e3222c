package baton

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/errs"
)

// MaxPayload is the longest notification payload, in bytes: PostgreSQL's
// NOTIFY limit with room to spare, the same on every backend.
const MaxPayload = 4000

var channelRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`) })

// ValidateChannel checks a notification channel name: 1 to 64 letters,
// digits, '_', '.', ':' or '-'.
func ValidateChannel(ch string) error {
	if !channelRE().MatchString(ch) {
		return fmt.Errorf("%w: channel %s: use 1 to 64 letters, digits, '_', '.', ':' or '-'", ErrInvalid, errs.Quote(ch))
	}
	return nil
}

func validateNotification(channel, payload string) error {
	if err := ValidateChannel(channel); err != nil {
		return err
	}
	if len(payload) > MaxPayload {
		return fmt.Errorf("%w: payload is %d bytes, more than %d", ErrInvalid, len(payload), MaxPayload)
	}
	if !utf8.ValidString(payload) {
		return fmt.Errorf("%w: payload is not valid UTF-8", ErrInvalid)
	}
	return nil
}

// Notification is one message on a channel.
type Notification struct {
	Channel string
	Payload string
}

// Notify sends payload to every listener of channel, in any process on any
// host, once the sending transaction (its own) commits.
func (c *Client) Notify(ctx context.Context, channel, payload string) error {
	if err := validateNotification(channel, payload); err != nil {
		return err
	}
	if err := c.drv.Notify(ctx, channel, payload); err != nil {
		return fmt.Errorf("baton: notify: %w", err)
	}
	return nil
}

// Execer runs a statement: *sql.Tx (and *sql.DB, *sql.Conn) satisfies it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// NotifyTx sends a notification inside the caller's transaction, on the
// same database as the client: listeners get it once that transaction
// commits, and never if it rolls back. On PostgreSQL delivery follows the
// commit at once (within the listener's poll interval for a listener
// behind a transaction pooler without listen_dsn, which reads
// notifications from a table); on SQLite other processes notice the commit
// within a millisecond or so; on MySQL/MariaDB, whose listeners are woken
// by baton only for commits it makes itself, within the client's poll
// interval.
func (c *Client) NotifyTx(ctx context.Context, tx Execer, channel, payload string) error {
	if err := validateNotification(channel, payload); err != nil {
		return err
	}
	return c.mq.NotifyIn(ctx, tx, channel, payload)
}

// Listener receives the notifications of some channels, from the moment
// Listen returned until Close. Notifications from one sender arrive in the
// order they committed. A listener that does not keep up is buffered in
// memory, never dropped; it never slows other listeners down.
//
// Notifications are not stored for absent listeners: one sent while no
// listener of this process was connected (a database restart, a network
// outage) may be missed. Use a queue when every message must be processed.
type Listener struct {
	c        *Client
	channels map[string]bool
	out      chan Notification
	mu       sync.Mutex
	cond     *sync.Cond
	buf      []Notification
	closed   bool
	closing  chan struct{} // closed by Close
	done     chan struct{}
}

// Listen starts receiving notifications on the channels.
func (c *Client) Listen(ctx context.Context, channels ...string) (*Listener, error) {
	if len(channels) == 0 {
		return nil, fmt.Errorf("%w: no channel to listen to", ErrInvalid)
	}
	l := &Listener{c: c, channels: map[string]bool{}, out: make(chan Notification),
		closing: make(chan struct{}), done: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	for _, ch := range channels {
		if err := ValidateChannel(ch); err != nil {
			return nil, err
		}
		l.channels[ch] = true
	}
	if err := c.listening(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.listeners[l] = true
	c.mu.Unlock()
	c.notifyUsers.In()
	go l.forward()
	return l, nil
}

// C delivers the notifications; it is closed by Close.
func (l *Listener) C() <-chan Notification { return l.out }

// Close stops the listener and closes C.
func (l *Listener) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.closing)
	l.cond.Broadcast()
	l.mu.Unlock()
	c := l.c
	c.mu.Lock()
	delete(c.listeners, l)
	c.mu.Unlock()
	c.notifyUsers.Out()
	<-l.done
}

func (l *Listener) push(n Notification) {
	l.mu.Lock()
	if !l.closed {
		l.buf = append(l.buf, n)
		l.cond.Signal()
	}
	l.mu.Unlock()
}

// forward moves buffered notifications to C, one at a time.
func (l *Listener) forward() {
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

// deliver hands a notification from the driver to this process's
// listeners of its channel.
func (c *Client) deliver(channel, payload string) {
	if channel == cancelChannel {
		if !c.deaf.Load() {
			c.onCancelNotification(payload)
		}
		return
	}
	if channel == pauseChannel {
		if !c.deaf.Load() {
			c.onPauseNotification(payload)
		}
		return
	}
	if q, ok := strings.CutPrefix(channel, "#q#"); ok {
		if c.deaf.Load() {
			return
		}
		if q == "*" {
			c.queueWaits.WakeAll()
		} else {
			c.queueWaits.Wake(q)
		}
		return
	}
	c.mu.Lock()
	ls := make([]*Listener, 0, len(c.listeners))
	for l := range c.listeners {
		if l.channels[channel] {
			ls = append(ls, l)
		}
	}
	c.mu.Unlock()
	for _, l := range ls {
		l.push(Notification{Channel: channel, Payload: payload})
	}
}
