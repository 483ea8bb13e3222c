package lease

import (
	"sync"

	"github.com/batonhq/baton/driver"
)

// Own records the identifiers the session's own calls were granted and
// has not released since, with the strongest mode granted: a hint, never
// an answer. A call on an identifier its session already holds in a mode
// that covers it (a re-entry) is refused by the session's own holder on
// the fast path and goes to the slow path's request, which grants it at
// once; the hint lets the engine go there straight. A stale hint (an
// instance released by another client, or by a release racing the grant)
// only sends a call down the slow path, which decides as always; every
// release forgets its scope before and after it runs, so a hint outlives
// no release of its own session.
type Own struct {
	mu   sync.Mutex
	held map[driver.Ident]driver.LockMode
}

// Granted records instances of ids granted in mode.
func (o *Own) Granted(ids []driver.Ident, mode driver.LockMode) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.held == nil {
		o.held = map[driver.Ident]driver.LockMode{}
	}
	for _, id := range ids {
		if m, ok := o.held[id]; !ok || m != driver.ModeWrite {
			o.held[id] = mode
		}
	}
}

// Covers reports whether the session was granted id in a mode that a
// request in mode cannot conflict with: a write lock covers both modes,
// a read lock only reads (a read lock's upgrade can wait).
func (o *Own) Covers(id driver.Ident, mode driver.LockMode) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	m, ok := o.held[id]
	return ok && (m == driver.ModeWrite || m == mode)
}

// Forget drops the hints of scope (one name, or a whole namespace when
// its Name is empty).
func (o *Own) Forget(scope driver.Ident) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if scope.Name != "" {
		delete(o.held, scope)
		return
	}
	for id := range o.held {
		if id.Within(scope) {
			delete(o.held, id)
		}
	}
}

// Scopes returns the namespaces (Name empty) of the recorded grants.
func (o *Own) Scopes() []driver.Ident {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := map[driver.Ident]bool{}
	var out []driver.Ident
	for id := range o.held {
		scope := driver.Ident{Kind: id.Kind, NS: id.NS}
		if !seen[scope] {
			seen[scope] = true
			out = append(out, scope)
		}
	}
	return out
}
