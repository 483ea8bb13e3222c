package sqlbase

// The sessions' lines for turnstiles (driver.Turnstiles): one
// connection of a session's own, outside the pool, with the identifiers
// whose turnstile it holds. A backend says how to open and close its
// connections; Lines keeps at most Max lines at once, waits a second
// after a failed connection before trying again, and closes a line on
// any error, which lets its turnstiles go.

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
)

// Lines is a backend's lines, by session id.
type Lines[C any] struct {
	// Open connects a new line; Close closes one (within a second).
	Open  func(ctx context.Context) (C, error)
	Close func(ctx context.Context, c C)
	// Max bounds the lines open at once: past it sessions wait through
	// the table.
	Max int32
	// LetGo, when set, gives back the turnstiles a line held as it
	// closes, for a backend whose turnstiles do not end with its
	// connections (SQLite's, in the process).
	LetGo func(ids []driver.Ident)

	lines sync.Map // session id -> *Line[C]
	count atomic.Int32
	after atomic.Int64 // no line is opened before this (Unix ns)
	off   atomic.Bool
}

// Line is one session's line. Its mutex is held by the call using it;
// Conn and Held are valid only then.
type Line[C any] struct {
	mu   sync.Mutex
	set  *Lines[C]
	Conn C
	open bool
	Held map[driver.Ident]bool
}

// TurnOff turns turnstiles off for good (the lines do not keep their
// server sessions); true the first time.
func (s *Lines[C]) TurnOff() bool { return s.off.CompareAndSwap(false, true) }

// get returns the session's line, opening it when the session has none;
// nil when turnstiles are off, every line is in use, or a connection
// failed less than a second ago.
func (s *Lines[C]) get(ctx context.Context, sessionID string) *Line[C] {
	if s.off.Load() {
		return nil
	}
	if v, ok := s.lines.Load(sessionID); ok {
		return v.(*Line[C])
	}
	if time.Now().UnixNano() < s.after.Load() {
		return nil
	}
	if s.count.Add(1) > s.Max {
		s.count.Add(-1)
		return nil
	}
	c, err := s.Open(ctx)
	if err != nil {
		s.count.Add(-1)
		// The table's path stays open and reports what is wrong.
		s.after.Store(time.Now().Add(time.Second).UnixNano())
		return nil
	}
	l := &Line[C]{set: s, Conn: c, open: true, Held: map[driver.Ident]bool{}}
	if v, loaded := s.lines.LoadOrStore(sessionID, l); loaded {
		s.count.Add(-1)
		s.closeConn(c)
		return v.(*Line[C])
	}
	return l
}

// Claim takes the session's line for acquisition p through the turnstile
// of p's identifier, locked (the caller unlocks it): nil for a read lock
// (only write locks take turnstiles: GET_LOCK has no shared mode), when
// the session has no line and none can be opened, the line is busy with
// another call of the session, is closed, or holds the turnstile already
// (the session's next instance is the table's). wait comes back never
// below 0; the engine has cut it to end before its call does (a
// statement cut off costs the connection, so the statement runs in a
// context without the call's deadline).
func (s *Lines[C]) Claim(ctx context.Context, p driver.FastAcquireParams, wait time.Duration) (*Line[C], time.Duration) {
	if p.Mode != driver.ModeWrite {
		return nil, 0
	}
	id := p.Ident
	l := s.get(ctx, p.SessionID)
	if l == nil || !l.TryLock() {
		return nil, 0
	}
	if !l.open || l.Held[id] {
		l.Unlock()
		return nil, 0
	}
	return l, max(wait, 0)
}

// Find returns the session's line, nil when it has none.
func (s *Lines[C]) Find(sessionID string) *Line[C] {
	if v, ok := s.lines.Load(sessionID); ok {
		return v.(*Line[C])
	}
	return nil
}

// End closes the session's line, if it has one.
func (s *Lines[C]) End(sessionID string) {
	v, ok := s.lines.LoadAndDelete(sessionID)
	if !ok {
		return
	}
	l := v.(*Line[C])
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Fail()
	s.count.Add(-1)
}

// CloseAll closes every line (the driver closes).
func (s *Lines[C]) CloseAll() {
	s.lines.Range(func(k, _ any) bool {
		s.End(k.(string))
		return true
	})
}

func (s *Lines[C]) closeConn(c C) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.Close(ctx, c)
}

// Lock and TryLock take the line for one call; Unlock gives it back.
func (l *Line[C]) Lock()         { l.mu.Lock() }
func (l *Line[C]) TryLock() bool { return l.mu.TryLock() }
func (l *Line[C]) Unlock()       { l.mu.Unlock() }

// Open reports whether the line's connection is open (its lock held).
func (l *Line[C]) Open() bool { return l.open }

// Fail closes the line's connection after an error, which lets its
// turnstiles go (its lock held).
func (l *Line[C]) Fail() {
	if l.open {
		l.set.closeConn(l.Conn)
		l.open = false
	}
	if l.set.LetGo != nil && len(l.Held) > 0 {
		l.set.LetGo(slices.Collect(maps.Keys(l.Held)))
	}
	clear(l.Held)
}

// Holds reports whether the session's line holds a turnstile in scope.
func (s *Lines[C]) Holds(sessionID string, scope driver.Ident) bool {
	l := s.Find(sessionID)
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.Held {
		if id.Within(scope) {
			return true
		}
	}
	return false
}

// Take forgets and returns the held turnstiles in scope (its Name empty:
// the whole namespace), which the caller is about to let go (its lock
// held).
func (l *Line[C]) Take(scope driver.Ident) []driver.Ident {
	var out []driver.Ident
	for id := range l.Held {
		if id.Within(scope) {
			out = append(out, id)
			delete(l.Held, id)
		}
	}
	return out
}
