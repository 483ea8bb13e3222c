package locks

import (
	"sync"
	"sync/atomic"

	"github.com/batonhq/baton/internal/sessions"
)

// Session is a session as the lock service knows it: its lease and life
// (sessions.Session), and what its own calls record to choose their paths.
type Session struct {
	*sessions.Session
	// Rows records where the session may have request rows.
	Rows Rows
	// Own records what the session's calls were granted (a hint for
	// re-entries).
	Own Own
	// Held counts the instances the session was granted and has not
	// released, as its own calls saw them (a release whose outcome is
	// unknown leaves them counted), and Calls its lock calls under way:
	// a session that holds nothing and makes no other call cannot be in a
	// deadlock, whatever it waits for.
	Held  atomic.Int64
	Calls atomic.Int32
	// Unlisting is read-locked while a listing of a granted wait
	// (behind a turnstile) is being deleted: a release of the session
	// locks it first, so that no such listing outlives the instance that
	// hides it from monitoring.
	Unlisting sync.RWMutex
}

// sessions are the service's live sessions by id, for Sessions.
type liveSessions struct {
	mu   sync.Mutex
	byID map[string]*Session
}

// Begin makes ls, a session just begun, one of the service's. A session
// that ended meanwhile is not kept (SessionEnded may have run first).
func (l *Service) Begin(ls *sessions.Session) *Session {
	s := &Session{Session: ls}
	l.sessions.mu.Lock()
	if l.sessions.byID == nil {
		l.sessions.byID = map[string]*Session{}
	}
	l.sessions.byID[ls.ID()] = s
	l.sessions.mu.Unlock()
	if ls.Err() != nil {
		l.forget(ls.ID())
	}
	return s
}

// Sessions returns the service's sessions of lss (the live ones a
// closing client's keeper hands back), in their order; one not begun
// here yet has made no call, and comes with empty records.
func (l *Service) Sessions(lss []*sessions.Session) []*Session {
	l.sessions.mu.Lock()
	defer l.sessions.mu.Unlock()
	out := make([]*Session, len(lss))
	for i, ls := range lss {
		if out[i] = l.sessions.byID[ls.ID()]; out[i] == nil {
			out[i] = &Session{Session: ls}
		}
	}
	return out
}

// forget drops an ended session.
func (l *Service) forget(id string) {
	l.sessions.mu.Lock()
	defer l.sessions.mu.Unlock()
	delete(l.sessions.byID, id)
}
