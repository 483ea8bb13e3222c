package baton

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/batonhq/baton/internal/notify"
)

// MaxPayload is the longest notification payload: 4000 bytes,
// PostgreSQL's NOTIFY limit with room to spare, the same on every backend.
const MaxPayload = notify.MaxPayload

// ValidateChannel checks a notification channel name: 1 to 64 letters,
// digits, '_', '.', ':' or '-'.
func ValidateChannel(ch string) error { return notify.ValidateChannel(ch) }

// Notification is one message on a channel.
type Notification struct {
	Channel string
	Payload string
}

func newNotification(channel, payload string) Notification {
	return Notification{Channel: channel, Payload: payload}
}

// Notify sends payload to every listener of channel, in any process on any
// host, once the sending transaction (its own) commits.
func (c *Client) Notify(ctx context.Context, channel, payload string) error {
	return c.notify.Send(ctx, channel, payload)
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
	return c.notify.SendTx(ctx, tx, channel, payload)
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
	l *notify.Listener[Notification]
}

// Listen starts receiving notifications on the channels.
func (c *Client) Listen(ctx context.Context, channels ...string) (*Listener, error) {
	if len(channels) == 0 {
		return nil, fmt.Errorf("%w: no channel to listen to", ErrInvalid)
	}
	for _, ch := range channels {
		if err := ValidateChannel(ch); err != nil {
			return nil, err
		}
	}
	if err := c.bus.Listening(ctx); err != nil {
		return nil, err
	}
	l, err := c.notify.Listen(channels, c.notifyUsers.Out)
	if err != nil {
		return nil, err
	}
	c.notifyUsers.In()
	return &Listener{l}, nil
}

// C delivers the notifications; it is closed by Close.
func (l *Listener) C() <-chan Notification { return l.l.C() }

// Close stops the listener and closes C.
func (l *Listener) Close() { l.l.Close() }
