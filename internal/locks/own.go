package locks

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
// only sends a call down the slow path, which decides as always. A
// release of all the session's instances in a scope forgets the scope
// before and after it runs (Forget), so a hint outlives no such release;
// a release of one instance of a re-entered lock (RELEASE_LOCK) counts
// them down instead (Released).
type Own struct {
	mu   sync.Mutex
	held map[driver.Ident]owned
}

// owned is what Own knows of one identifier: the strongest mode granted,
// how many instances the session's calls were granted there since a
// release left it none, and whether the first of them was an inline
// holder (driver.Request.Inline), which a release with a limit takes
// last (the oldest instance).
type owned struct {
	mode   driver.LockMode
	n      int
	inline bool
}

// Granted records a call's grants (rs) in mode.
func (o *Own) Granted(rs []driver.Request, mode driver.LockMode) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.held == nil {
		o.held = map[driver.Ident]owned{}
	}
	for _, r := range rs {
		e := o.held[r.Ident]
		if e.n == 0 {
			e.inline = r.Inline
		}
		if e.mode != driver.ModeWrite {
			e.mode = mode
		}
		e.n++
		o.held[r.Ident] = e
	}
}

// Released records a release of the newest n instances of id (a release
// with a limit). It reports whether what the session has left there is
// the one inline holder it was granted first: no request row of the
// session on id. A release that found nothing forgets id.
func (o *Own) Released(id driver.Ident, n int) (inlineOnly bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.held[id]
	if !ok || n <= 0 || e.n <= n {
		delete(o.held, id)
		return false
	}
	e.n -= n
	o.held[id] = e
	return e.n == 1 && e.inline
}

// Covers reports whether the session was granted id in a mode that a
// request in mode cannot conflict with: a write lock covers both modes,
// a read lock only reads (a read lock's upgrade can wait).
func (o *Own) Covers(id driver.Ident, mode driver.LockMode) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.held[id]
	return ok && (e.mode == driver.ModeWrite || e.mode == mode)
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
