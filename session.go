package baton

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/locks"
	mq "github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/txn"
)

// Session is a live participant: every lock belongs to one. Its lease is
// renewed by the client's heartbeat; if the process dies, the lease runs
// out and another process frees everything the session held.
//
// Holding a lock until Release is not guaranteed: if the lease cannot be
// kept (the database is unreachable for longer than the lease, or the
// process stalls), the session is lost, Done is closed and Err says why.
// Programs that must never act without the lock select on Done, or check a
// lock's fencing token at the resource.
type Session struct {
	c  *Client
	id string
	ls *locks.Session // its lease and life, and its lock calls' records
	// holds: the claims it knows it holds, to settle one whose reply was
	// lost.
	holds mq.Holds
}

// SessionOptions configure a new session.
type SessionOptions struct {
	// Name is the owner name shown in monitoring (default: the client's).
	Name string
}

// NewSession starts a session.
func (c *Client) NewSession(ctx context.Context, opts ...SessionOptions) (*Session, error) {
	var o SessionOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Name == "" {
		o.Name = c.opts.Name
	}
	ls, err := c.leases.Begin(ctx, randomID(), o.Name)
	if err != nil {
		return nil, err
	}
	return &Session{c: c, id: ls.ID(), ls: c.locks.Begin(ls)}, nil
}

// ID returns the session's id, as shown in monitoring and by IsUsedLock.
func (s *Session) ID() string { return s.id }

// Done is closed when the session ends: by Close, or because it was lost.
func (s *Session) Done() <-chan struct{} { return s.ls.Done() }

// Err returns nil while the session lives, ErrClosed after Close, and an
// error wrapping ErrSessionLost with the reason after a loss.
func (s *Session) Err() error { return s.ls.Err() }

// Close ends the session and releases every lock it holds, at once.
func (s *Session) Close(ctx context.Context) error { return s.c.owner.Close(ctx, s.ls.Session) }

// SessionInfo is one session of any process, as monitoring shows it.
type SessionInfo struct {
	ID    string `json:"id"`
	Owner string `json:"owner"` // host:pid/name
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	Name  string `json:"name"`
	// Started is when the session began; Expires when its lease runs out
	// unless renewed (its owner's last renewal plus the lease).
	Started time.Time `json:"started"`
	Expires time.Time `json:"expires"`
}

// Sessions lists every session of every process, oldest first.
func (c *Client) Sessions(ctx context.Context) ([]SessionInfo, error) {
	rows, err := txn.InTxV(ctx, c.drv, func(tx driver.Tx) ([]driver.Session, error) { return tx.SessionList(ctx) })
	if err != nil {
		return nil, fmt.Errorf("baton: sessions: %w", err)
	}
	out := make([]SessionInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, sessionInfo(r))
	}
	return out, nil
}

func sessionInfo(r driver.Session) SessionInfo {
	return SessionInfo{ID: r.ID, Owner: fmt.Sprintf("%s:%d/%s", r.Host, r.PID, r.Name), Host: r.Host, PID: r.PID,
		Name: r.Name, Started: r.CreatedAt, Expires: r.ExpiresAt}
}
