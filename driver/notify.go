package driver

import (
	"context"
	"time"
)

// Notifier is the notify slice of a backend: notifications, and the
// wake-up mechanism that carries them with the lock grants.
type Notifier interface {
	// Listen starts the backend's wake-up mechanism for one client; see
	// ListenParams. The returned stop function ends listening.
	Listen(ctx context.Context, p ListenParams) (stop func(), err error)

	// SetWaiting tells the listener whether the client currently has lock
	// waiters, so that backends with a cheap change check can poll it fast
	// only when someone waits.
	SetWaiting(clientID string, waiting bool)

	// SetNotifying tells the listener whether the client has notification
	// listeners: only then does it read notifications, and backends with a
	// cheap change check poll it fast.
	SetNotifying(clientID string, on bool)

	// Notify sends a notification in a transaction of its own; listeners
	// get it once it commits.
	Notify(ctx context.Context, channel, payload string) error

	// NotifyStatement is the statement that sends a notification inside
	// the caller's transaction, with its arguments.
	NotifyStatement(channel, payload string) (query string, args []any)
}

// ListenParams configure Notifier.Listen.
type ListenParams struct {
	ClientID string
	// Wake is called (from any goroutine) whenever lock state may have
	// changed for this client; it must be cheap and must not block. When
	// the backend knows exactly which requests were granted (ID, Status
	// and Token set; SessionID and CallID too where it knows them: request
	// ids can repeat, sessions and calls never), it passes them and the
	// engine needs no query; otherwise it passes nil.
	Wake func(granted []Request)
	// Notify receives every committed notification, in commit order per
	// sender, while SetNotifying is on. It must not block.
	Notify func(channel, payload string)
	// Interval is the client's poll interval: what the backend cannot be
	// told of (notifications kept in a table, other processes' commits
	// on SQLite) it looks for at least this often. Lost lock wake-ups need
	// nothing of it: the engine checks its waiting requests every interval
	// itself.
	Interval time.Duration
}
