// Package sessions keeps sessions alive: each session's local lease deadline,
// and the Keeper that renews a client's sessions, reaps dead sessions of
// other processes and deletes the sessions it gave up on.
//
// The rule that keeps two holders of one write lock apart: the owner counts
// its session lost at the start of its last successful renewal plus the
// lease, minus a safety margin, on its own monotonic clock; the database
// frees the session's locks only after the full lease measured from a
// later moment (when the renewal ran there). The owner hears "lost" before
// anyone else can hear "granted".
package sessions

import (
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/errs"
)

// Session is one session's lease and life: live until ended (closed, or
// lost), with a local deadline that every successful renewal moves.
type Session struct {
	id     string
	keeper *Keeper
	done   chan struct{}

	mu         sync.Mutex
	err        error
	registered bool // its row is in the database
	deadline   time.Time
	timer      *time.Timer

	// Incarnation is the lock state's incarnation the session began in,
	// and Lockable the local moment before which it may not be granted a
	// lock (see driver.Sessions.Incarnation); zero where the backend keeps lock
	// state through crashes.
	Incarnation int64
	Lockable    time.Time
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Done is closed when the session ends.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is nil while the session lives, then why it ended.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Renewed moves the local deadline after a successful renewal (or the
// insert) that started at start.
func (s *Session) Renewed(start time.Time) {
	d := start.Add(s.keeper.lease - s.keeper.margin)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if d.After(s.deadline) {
		s.deadline = d
	}
	wait := s.deadline.Sub(s.keeper.cfg.Now())
	if s.timer == nil {
		s.timer = time.AfterFunc(wait, s.expire)
	} else {
		s.timer.Reset(wait)
	}
}

// expire runs when the local deadline may have passed.
func (s *Session) expire() {
	s.mu.Lock()
	left := s.deadline.Sub(s.keeper.cfg.Now())
	if s.err == nil && left > 0 {
		s.timer.Reset(left) // renewed meanwhile
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.Lose(fmt.Errorf("%w: no lease renewal succeeded in time (the database could free its locks %v after the last one)", errs.ErrSessionLost, s.keeper.lease))
}

// live reports whether the session is neither ended nor past its local
// deadline.
func (s *Session) live() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err == nil && s.keeper.cfg.Now().Before(s.deadline)
}

// Check is nil while the session lives: a grant observed while it does
// was made before the database could have reaped the session. Past the
// deadline it ends the session as lost and returns why.
func (s *Session) Check() error {
	if err := s.Err(); err != nil {
		return err
	}
	if !s.live() {
		s.expire()
		return s.Err()
	}
	return nil
}

// renewable reports whether the keeper renews the session: registered in
// the database and not ended.
func (s *Session) renewable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registered && s.err == nil
}

// End marks the session ended with err, and reports whether it was live.
// The keeper forgets it and its lock waiters are answered at once.
func (s *Session) End(err error) bool {
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
	s.keeper.forget(s.id)
	return true
}

// Lose ends the session with err. Its row and everything it holds are
// deleted by the keeper as soon as the database answers: a lost session
// is never renewed again.
func (s *Session) Lose(err error) {
	if s.End(err) {
		s.keeper.abandon(s.id)
	}
}

// Lost ends the session as lost, saying why (it wraps errs.ErrSessionLost),
// and returns its error: the first reason it was ended with.
func (s *Session) Lost(format string, a ...any) error {
	s.Lose(fmt.Errorf("%w: "+format, append([]any{errs.ErrSessionLost}, a...)...))
	return s.Err()
}
