package baton

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
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
	c     *Client
	id    string
	name  string
	done  chan struct{}
	mu    sync.Mutex
	err   error
	isReg bool
	// deadline is the local, monotonic moment at which the session counts
	// itself lost: the start of its last successful renewal plus the
	// lease, minus the client's safety margin. The database frees the
	// session's locks only after the full lease, measured from a later
	// moment (when the renewal ran there), so the owner hears "lost"
	// before anyone else can hear "granted".
	deadline time.Time
	timer    *time.Timer
	// incarnation is the lock state's incarnation the session began in,
	// and lockable the local moment before which it may not be granted a
	// lock (see driver.Incarnations); zero where the backend keeps lock
	// state through crashes.
	incarnation int64
	lockable    time.Time
	// rows is set once the session may hold an instance that is not an
	// inline holder (driver.Request.Inline): from before its first slow
	// path request, and after a grant of several names that was not
	// inline. Until then its releases tell the backend so
	// (FastReleaseParams.InlineOnly), which saves looking for rows.
	rows atomic.Bool
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
	s := &Session{c: c, id: randomID(), name: o.Name, done: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.sessions[s.id] = s
	c.mu.Unlock()
	start := time.Now()
	if inc, ok := c.drv.(driver.Incarnations); ok {
		id, wait, err := inc.Incarnation(ctx, c.opts.Lease)
		if err != nil {
			c.mu.Lock()
			delete(c.sessions, s.id)
			c.mu.Unlock()
			return nil, fmt.Errorf("baton: start session: %w", err)
		}
		s.incarnation, s.lockable = id, start.Add(wait)
	}
	err := c.inTx(ctx, func(tx driver.Tx) error {
		return tx.SessionInsert(ctx, driver.Session{ID: s.id, ClientID: c.id, Host: c.host, PID: c.pid, Name: o.Name, HostID: c.hostID}, c.opts.Lease)
	})
	if err != nil {
		c.mu.Lock()
		delete(c.sessions, s.id)
		c.mu.Unlock()
		return nil, fmt.Errorf("baton: start session: %w", err)
	}
	s.mu.Lock()
	s.isReg = true
	s.mu.Unlock()
	s.renewed(start)
	if err := s.check(); err != nil {
		// The insert took longer than the lease allows: never use it.
		return nil, fmt.Errorf("baton: start session: %w", err)
	}
	return s, nil
}

// renewed moves the session's local deadline after a successful renewal
// (or the insert) that started at start.
func (s *Session) renewed(start time.Time) {
	d := start.Add(s.c.opts.Lease - s.c.margin())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if d.After(s.deadline) {
		s.deadline = d
	}
	wait := time.Until(s.deadline)
	if s.timer == nil {
		s.timer = time.AfterFunc(wait, s.expire)
	} else {
		s.timer.Reset(wait)
	}
}

// expire runs when the local deadline may have passed.
func (s *Session) expire() {
	s.mu.Lock()
	left := time.Until(s.deadline)
	if s.err == nil && left > 0 {
		s.timer.Reset(left) // renewed meanwhile
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.lose(fmt.Errorf("%w: no lease renewal succeeded in time (the database could free its locks %v after the last one)", ErrSessionLost, s.c.opts.Lease))
}

// live reports whether the session is neither ended nor past its local
// deadline. A grant observed while live was made before the database could
// have reaped the session.
func (s *Session) live() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err == nil && time.Now().Before(s.deadline)
}

// ID returns the session's id, as shown in monitoring and by IsUsedLock.
func (s *Session) ID() string { return s.id }

// Done is closed when the session ends: by Close, or because it was lost.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns nil while the session lives, ErrClosed after Close, and an
// error wrapping ErrSessionLost with the reason after a loss.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Session) registered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.isReg && s.err == nil
}

// end marks the session ended with err; it reports whether it was live.
func (s *Session) end(err error) bool {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return false
	}
	s.err = err
	close(s.done)
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	s.c.mu.Lock()
	delete(s.c.sessions, s.id)
	s.c.mu.Unlock()
	// Wake this session's waiters so that they fail at once.
	s.c.lockWaits.EndSession(s.id)
	return true
}

// lose ends the session with err. Its row and everything it holds are
// deleted by the client's heartbeat as soon as the database answers: a lost
// session is never renewed again.
func (s *Session) lose(err error) {
	if s.end(err) {
		s.c.abandon(s.id)
	}
}

// lost ends the session as lost, saying why (it wraps ErrSessionLost), and
// returns its error: the first reason it was ended with.
func (s *Session) lost(format string, a ...any) error {
	s.lose(fmt.Errorf("%w: "+format, append([]any{ErrSessionLost}, a...)...))
	return s.Err()
}

// Close ends the session and releases every lock it holds, at once.
func (s *Session) Close(ctx context.Context) error {
	if err := s.Err(); err != nil {
		return nil
	}
	if !s.end(ErrClosed) {
		return nil
	}
	if err := s.c.endSession(ctx, s.id); err != nil {
		return fmt.Errorf("baton: close session: %w", err)
	}
	return nil
}

func (s *Session) check() error {
	if err := s.Err(); err != nil {
		return err
	}
	if !s.live() {
		s.expire()
		return s.Err()
	}
	return nil
}

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
	var rows []driver.Session
	err := c.inTx(ctx, func(tx driver.Tx) error {
		var err error
		rows, err = tx.SessionList(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("baton: sessions: %w", err)
	}
	out := make([]SessionInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, SessionInfo{ID: r.ID, Owner: fmt.Sprintf("%s:%d/%s", r.Host, r.PID, r.Name), Host: r.Host, PID: r.PID,
			Name: r.Name, Started: r.CreatedAt, Expires: r.ExpiresAt})
	}
	return out, nil
}
